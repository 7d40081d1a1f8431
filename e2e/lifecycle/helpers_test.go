package lifecycle

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
)

// The workloads of these tests: a RackedCluster with one rack, autoscaled
// between 1 and 6 by one AverageValue trigger of threshold 10 on a gauge its
// pod exports at 25, so that every tick that finds data wants 3 replicas.
const (
	loadMetric    = "churn_load"
	loadValue     = 25
	autoscaledTo  = 3
	userScaledTo  = 2
	loadQuery     = `max(churn_load{namespace="${namespace}",job="${name}"})`
	rackedCluster = "rackedclusters.samples.scaleplane.io"
)

// appConfig is the component configuration of the app under test: the
// sample profiles, the webhook served where the framework's configurations
// point, a tick and a scrape every second.
func appConfig() *configv1alpha2.Configuration {
	cfg := profile.SampleConfiguration()
	cfg.Webhook.Host = cluster.WebhookHost
	cfg.Webhook.Port = cluster.WebhookPort
	cfg.Webhook.CertDir = cluster.WebhookCertDir
	cfg.Autoscaler.PollingIntervalSeconds = 1
	cfg.Metrics.ScrapeIntervalSeconds = 1
	return cfg
}

// exporter serves every test pod's /metrics on 127.0.0.1: the scraper adds
// each pod's namespace and job labels, so one server feeds them all.
func exporter(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# TYPE %s gauge\n%s %d\n", loadMetric, loadMetric, loadValue)
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return port
}

// workload is one autoscaled RackedCluster and its pod.
type workload struct {
	ns, name, port string
}

func (w workload) pod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: w.name + "-a-0",
			Labels:      map[string]string{"samples.scaleplane.io/cluster": w.name, "samples.scaleplane.io/rack": "a"},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": w.port}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app"}}},
	}
}

func (w workload) object() *unstructured.Unstructured {
	u := framework.RackedCluster(w.ns, w.name, 1, 1)
	_ = unstructured.SetNestedField(u.Object, map[string]any{
		"minReplicas": int64(1), "maxReplicas": int64(6),
		"triggers": []any{map[string]any{"name": "load", "type": "AverageValue", "source": "promql", "query": loadQuery, "threshold": float64(10)}},
	}, "spec", "scaleConfig")
	return u
}

// create makes the pod (running and ready at 127.0.0.1, the status a
// kubelet would write) and the RackedCluster at 1 replica.
func (w workload) create(ctx context.Context) error {
	pod := w.pod()
	if err := cluster.Client.Create(ctx, pod); err != nil {
		return fmt.Errorf("create pod %s: %w", pod.Name, err)
	}
	pod.Status = corev1.PodStatus{
		Phase:      corev1.PodRunning,
		PodIP:      "127.0.0.1",
		PodIPs:     []corev1.PodIP{{IP: "127.0.0.1"}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
	}
	if err := cluster.Client.Status().Update(ctx, pod); err != nil {
		return fmt.Errorf("set pod %s status: %w", pod.Name, err)
	}
	if err := cluster.Client.Create(ctx, w.object()); err != nil {
		return fmt.Errorf("create %s: %w", w.name, err)
	}
	return nil
}

// scale sets R as a user would: with kubectl scale, or with a write to
// /scale as an HPA or KEDA does.
func (w workload) scale(ctx context.Context, replicas int64, kubectl bool) error {
	if kubectl {
		_, err := cluster.Kubectl(ctx, "-n", w.ns, "scale", rackedCluster+"/"+w.name, "--replicas="+strconv.FormatInt(replicas, 10))
		return err
	}
	scale := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling/v1", "kind": "Scale",
		"metadata": map[string]any{"name": w.name, "namespace": w.ns},
		"spec":     map[string]any{"replicas": replicas},
	}}
	if err := cluster.Client.SubResource("scale").Update(ctx, w.object(), client.WithSubResourceBody(scale)); err != nil {
		return fmt.Errorf("write %s/scale: %w", w.name, err)
	}
	return nil
}

// delete removes the RackedCluster and its pod (no garbage collector runs).
func (w workload) delete(ctx context.Context) error {
	if err := cluster.Client.Delete(ctx, w.object()); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", w.name, err)
	}
	if err := cluster.Client.Delete(ctx, w.pod()); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod of %s: %w", w.name, err)
	}
	return nil
}

// replicas reads R.
func (w workload) replicas(ctx context.Context) (int64, error) {
	u := w.object()
	if err := cluster.Client.Get(ctx, types.NamespacedName{Namespace: w.ns, Name: w.name}, u); err != nil {
		return 0, err
	}
	r, _, err := unstructured.NestedInt64(u.Object, "spec", "replicas")
	return r, err
}

// awaitReplicas waits until R is want. It runs in the churn's goroutines,
// where a test may not call Fatal, so it returns an error at its deadline
// instead of failing the test as framework.Eventually does.
func (w workload) awaitReplicas(ctx context.Context, want int64, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		r, err := w.replicas(ctx)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("replicas %d", r)
		return r == want, nil
	})
	if err != nil {
		return fmt.Errorf("%s/%s did not reach %d replicas within %s (%s): %w", w.ns, w.name, want, timeout, last, err)
	}
	return nil
}

// sample is one series of a /metrics page.
type sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// scrape reads a Prometheus text page.
func scrape(ctx context.Context, c *http.Client, url, token string) ([]sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", url, err)
	}
	var out []sample
	for name, f := range families {
		for _, m := range f.GetMetric() {
			s := sample{Name: name, Labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				s.Labels[l.GetName()] = l.GetValue()
			}
			switch {
			case m.GetGauge() != nil:
				s.Value = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				s.Value = m.GetCounter().GetValue()
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// workerState is the autoscaler's worker gauges summed over every kind,
// and the per-workload series of a namespace still exported.
type workerState struct {
	Workers, Busy, Workloads int
	// KindWorkers are the workers of each kind.
	KindWorkers       map[string]int
	OldestTickSeconds float64
	// Series are the names of the per-workload series left in the
	// namespace, as "metric/name".
	Series []string
}

func (s workerState) String() string {
	return fmt.Sprintf("workers %d, busy %d, oldest tick %.3gs, workloads in memory %d, series left %d %v",
		s.Workers, s.Busy, s.OldestTickSeconds, s.Workloads, len(s.Series), first(s.Series, 5))
}

func first[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func workersOf(samples []sample, ns string) workerState {
	s := workerState{KindWorkers: map[string]int{}}
	for _, m := range samples {
		switch m.Name {
		case "scaleplane_autoscaler_workers":
			s.Workers += int(m.Value)
			s.KindWorkers[m.Labels["kind"]] += int(m.Value)
		case "scaleplane_autoscaler_busy_workers":
			s.Busy += int(m.Value)
		case "scaleplane_autoscaler_workloads":
			s.Workloads += int(m.Value)
		case "scaleplane_autoscaler_oldest_tick_seconds":
			s.OldestTickSeconds = max(s.OldestTickSeconds, m.Value)
		case "scaleplane_desired_replicas", "scaleplane_trigger_value", "scaleplane_trigger_errors_total":
			if m.Labels["namespace"] == ns {
				s.Series = append(s.Series, m.Name+"/"+m.Labels["name"])
			}
		}
	}
	sort.Strings(s.Series)
	return s
}
