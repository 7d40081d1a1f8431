package prometheus

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
)

// env is the real Prometheus and the scaleplane app whose remote source it
// is, shared by the package's tests.
type env struct{ prom *framework.Prometheus }

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
	prom, err := framework.StartPrometheus(ctx, filepath.Join(cluster.Dir, "prometheus"))
	if err != nil {
		return nil, err
	}
	framework.BeforeStop(prom.Stop)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg := profile.SampleConfiguration()
	cfg.Webhook.Host = "127.0.0.1"
	cfg.Webhook.Port = port
	cfg.Webhook.CertDir = filepath.Join(cluster.Dir, "scaleplane-certs")
	cfg.Autoscaler.PollingIntervalSeconds = 1
	cfg.Metrics.ScrapeIntervalSeconds = 1
	// The real server is the default source: "prometheus".
	cfg.Autoscaler.PrometheusURL = prom.URL
	a, err := app.New(app.Options{
		Config:      cfg,
		RestConfig:  cluster.Config,
		CertMode:    app.CertSelfSigned,
		Namespace:   "scaleplane-prometheus-e2e",
		WebhookURL:  "https://127.0.0.1:" + strconv.Itoa(port),
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
			fmt.Fprintf(os.Stderr, "prometheus e2e: scaleplane stopped with: %v\n", err)
		}
	})
	return &env{prom: prom}, nil
}

// rackedCluster creates a RackedCluster with two racks, retrying while the
// app's webhooks start.
func rackedCluster(t *testing.T, ns, name string, replicas int64, scaleConfig map[string]any) {
	t.Helper()
	u := framework.RackedCluster(ns, name, replicas, replicas, replicas)
	if err := unstructured.SetNestedField(u.Object, scaleConfig, "spec", "scaleConfig"); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		if err := cluster.Client.Create(ctx, u.DeepCopy()); err != nil {
			return false, fmt.Sprintf("create %s: %v", name, err)
		}
		return true, ""
	})
}

// change is one value spec.replicas took, and when the watch saw it.
type change struct {
	replicas int64
	at       time.Time
}

// recorder records, through a watch, every value of spec.replicas of the
// RackedClusters of a namespace: no value is missed, however briefly held.
type recorder struct {
	mu      sync.Mutex
	changes map[string][]change
}

func record(t *testing.T, ns string) *recorder {
	t.Helper()
	dc, err := dynamic.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	gvr := framework.RackedClusterGVK.GroupVersion().WithResource("rackedclusters")
	w, err := dc.Resource(gvr).Namespace(ns).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	r := &recorder{changes: map[string][]change{}}
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
			r.mu.Lock()
			cs := r.changes[u.GetName()]
			if len(cs) == 0 || cs[len(cs)-1].replicas != n {
				r.changes[u.GetName()] = append(cs, change{n, time.Now()})
			}
			r.mu.Unlock()
		}
	}()
	return r
}

// trajectory is the sequence of distinct counts name went through.
func (r *recorder) trajectory(name string) ([]int64, []time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var counts []int64
	var times []time.Time
	for _, c := range r.changes[name] {
		counts = append(counts, c.replicas)
		times = append(times, c.at)
	}
	return counts, times
}
