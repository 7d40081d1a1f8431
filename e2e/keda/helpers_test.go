package keda

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
)

// env is what every test shares: KEDA and the scaleplane app, started by
// the first test that asks and stopped after the last.
type env struct {
	// externalScaler is scaleplane's KEDA external scaler address.
	externalScaler string
}

var (
	envOnce sync.Once
	shared  *env
	envErr  error
)

func start(t *testing.T) *env {
	t.Helper()
	envOnce.Do(func() { shared, envErr = startEnv() })
	if envErr != nil {
		t.Fatal(envErr)
	}
	return shared
}

func startEnv() (*env, error) {
	ctx := context.Background()
	k, err := framework.StartKEDA(ctx, cluster)
	if err != nil {
		return nil, err
	}
	framework.BeforeStop(k.Stop)

	e := &env{}
	if e.externalScaler, err = freeAddr(); err != nil {
		return nil, err
	}
	webhook, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, webhookPort, _ := net.SplitHostPort(webhook)
	cfg := profile.SampleConfiguration()
	cfg.Webhook.Host = "127.0.0.1"
	cfg.Webhook.Port, _ = strconv.Atoi(webhookPort)
	cfg.Webhook.CertDir = filepath.Join(cluster.Dir, "scaleplane-certs")
	cfg.Autoscaler.PollingIntervalSeconds = 1
	cfg.Metrics.ScrapeIntervalSeconds = 1
	cfg.Autoscaler.ExternalScaler.BindAddress = e.externalScaler
	a, err := app.New(app.Options{
		Config:      cfg,
		RestConfig:  cluster.Config,
		CertMode:    app.CertSelfSigned,
		Namespace:   "scaleplane-keda-e2e",
		WebhookURL:  "https://" + webhook,
		WebhookIPs:  []string{"127.0.0.1"},
		MetricsAddr: "0",
		ProbeAddr:   "0",
	})
	if err != nil {
		return nil, fmt.Errorf("build app: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	framework.BeforeStop(func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintf(os.Stderr, "keda e2e: scaleplane stopped with: %v\n", err)
		}
	})
	return e, nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// valueServer is the HTTP endpoint of a KEDA metrics-api trigger:
// {"value": v}.
type valueServer struct {
	srv *httptest.Server
	mu  sync.Mutex
	v   float64
}

func newValueServer(t *testing.T, v float64) *valueServer {
	t.Helper()
	s := &valueServer{v: v}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]float64{"value": s.v})
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *valueServer) set(v float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.v = v
}

// metricsAPITrigger is a KEDA metrics-api trigger reading s, target per
// replica 10.
func (s *valueServer) trigger() string {
	return fmt.Sprintf(`
  - type: metrics-api
    metadata:
      url: %s/value
      valueLocation: value
      targetValue: "10"`, s.srv.URL)
}

// scaledObject is a ScaledObject on the RackedCluster target, polling
// every second.
func scaledObject(name, target string, min, max int, triggers string) string {
	return fmt.Sprintf(`apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: %s
spec:
  scaleTargetRef: {apiVersion: samples.scaleplane.io/v1alpha1, kind: RackedCluster, name: %s}
  pollingInterval: 1
  cooldownPeriod: 1
  minReplicaCount: %d
  maxReplicaCount: %d
  advanced:
    horizontalPodAutoscalerConfig:
      behavior:
        scaleDown: {stabilizationWindowSeconds: 0}
  triggers:%s
`, name, target, min, max, triggers)
}

func kubectl(t *testing.T, ns string, args ...string) string {
	t.Helper()
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	out, err := cluster.Kubectl(context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func apply(t *testing.T, ns, manifest string) {
	t.Helper()
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		// The webhooks may still be starting with the app.
		if _, err := cluster.KubectlWithInput(ctx, manifest, "apply", "-n", ns, "-f", "-"); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// rackedCluster is a RackedCluster with two racks of replicas members and
// the given scale config (YAML, indented under spec), or none.
func rackedCluster(name string, replicas int, scaleConfig string) string {
	s := fmt.Sprintf(`apiVersion: samples.scaleplane.io/v1alpha1
kind: RackedCluster
metadata:
  name: %s
spec:
  replicas: %d
  racks:
  - {name: a, members: %d}
  - {name: b, members: %d}
`, name, replicas, replicas, replicas)
	if scaleConfig != "" {
		s += "  scaleConfig:\n" + scaleConfig
	}
	return s
}

func getHPA(ctx context.Context, ns, name string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	h := &autoscalingv2.HorizontalPodAutoscaler{}
	return h, cluster.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, h)
}

func waitHPA(t *testing.T, ns, name string) *autoscalingv2.HorizontalPodAutoscaler {
	t.Helper()
	var h *autoscalingv2.HorizontalPodAutoscaler
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		var err error
		h, err = getHPA(ctx, ns, name)
		return err == nil, fmt.Sprintf("HPA %s/%s: %v", ns, name, err)
	})
	return h
}

func waitNoHPA(t *testing.T, ns, name string) {
	t.Helper()
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		_, err := getHPA(ctx, ns, name)
		return apierrors.IsNotFound(err), fmt.Sprintf("HPA %s/%s still there (%v)", ns, name, err)
	})
}

// ours and kedas name scaleplane's and KEDA's HPA of a RackedCluster.
func ours(name string) string {
	return controllers.HPAName(name, schema.GroupKind{Group: profile.SampleGroup, Kind: "RackedCluster"})
}
func kedas(so string) string           { return "keda-hpa-" + so }
func atLeast(n int64) func(int64) bool { return func(r int64) bool { return r >= n } }
func exactly(n int64) func(int64) bool { return func(r int64) bool { return r == n } }

// waitEvent waits for a core/v1 event about name with this type and reason
// whose message contains every word, and returns it.
func waitEvent(t *testing.T, ns, name, eventType, reason string, words ...string) corev1.Event {
	t.Helper()
	var found corev1.Event
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		var list corev1.EventList
		if err := cluster.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.InvolvedObject.Name != name {
				continue
			}
			seen = append(seen, e.Type+"/"+e.Reason+": "+e.Message)
			if e.Type != eventType || e.Reason != reason {
				continue
			}
			ok := true
			for _, w := range words {
				ok = ok && strings.Contains(e.Message, w)
			}
			if ok {
				found = e
				return true, ""
			}
		}
		return false, fmt.Sprintf("no %s %s event about %s with %q; seen %q", eventType, reason, name, words, seen)
	})
	return found
}

// events lists the events about name with reason.
func events(t *testing.T, ns, name, reason string) []corev1.Event {
	t.Helper()
	var list corev1.EventList
	if err := cluster.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// soCondition waits until the ScaledObject's condition has status want
// and returns its message.
func soCondition(t *testing.T, ns, name, condition, want string) string {
	t.Helper()
	var msg string
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		so := &unstructured.Unstructured{}
		so.SetGroupVersionKind(controllers.ScaledObjectGVK)
		if err := cluster.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, so); err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(so.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == condition {
				msg, _ = m["message"].(string)
				return m["status"] == want, fmt.Sprintf("ScaledObject %s condition %s=%v (%v)", name, condition, m["status"], m["message"])
			}
		}
		return false, fmt.Sprintf("ScaledObject %s has no %s condition yet: %v", name, condition, conds)
	})
	return msg
}

// managedBy reports the field managers of a RackedCluster.
func managedBy(t *testing.T, ns, name string) map[string]time.Time {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(framework.RackedClusterGVK)
	if err := cluster.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	out := map[string]time.Time{}
	for _, f := range u.GetManagedFields() {
		if f.Time != nil {
			out[f.Manager] = f.Time.Time
		}
	}
	return out
}
