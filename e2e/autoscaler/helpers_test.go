package autoscaler

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

var rackedClusterGVK = schema.GroupVersionKind{Group: "samples.scaleplane.io", Version: "v1alpha1", Kind: "RackedCluster"}

// exporter serves /metrics for one pod: an http_requests_total counter
// that grows at the rate the test sets, integrated between scrapes, or a
// 500 while failing.
type exporter struct {
	srv *httptest.Server

	mu      sync.Mutex
	rate    float64
	total   float64
	last    time.Time
	failing bool
}

func newExporter(t *testing.T, rate float64) *exporter {
	t.Helper()
	e := &exporter{rate: rate, last: time.Now()}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *exporter) serve(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	e.total += e.rate * now.Sub(e.last).Seconds()
	e.last = now
	if e.failing {
		http.Error(w, "exporter outage", http.StatusInternalServerError)
		return
	}
	fmt.Fprintf(w, "# TYPE http_requests_total counter\nhttp_requests_total %g\n", e.total)
}

// setRate changes the request rate from now on.
func (e *exporter) setRate(r float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	e.total += e.rate * now.Sub(e.last).Seconds()
	e.last, e.rate = now, r
}

func (e *exporter) setFailing(f bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failing = f
}

func (e *exporter) port() string {
	_, port, _ := net.SplitHostPort(e.srv.Listener.Addr().String())
	return port
}

// addPod creates a running, ready Pod of the RackedCluster name whose
// metrics the exporter serves on 127.0.0.1: no kubelet runs, so the test
// writes the status a kubelet would.
func addPod(t *testing.T, ns, name string, e *exporter) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-a-0",
			Labels:      map[string]string{"samples.scaleplane.io/cluster": name, "samples.scaleplane.io/rack": "a"},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": e.port()}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app"}}},
	}
	if err := cluster.Client.Create(ctx, pod); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	pod.Status = corev1.PodStatus{
		Phase:      corev1.PodRunning,
		PodIP:      "127.0.0.1",
		PodIPs:     []corev1.PodIP{{IP: "127.0.0.1"}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
	}
	if err := cluster.Client.Status().Update(ctx, pod); err != nil {
		t.Fatalf("set pod status: %v", err)
	}
}

// rpsQuery is the trigger of every test: requests per second over the
// workload's pods, over 5 s of 1 s scrapes.
const rpsQuery = `sum(rate(http_requests_total{namespace="${namespace}",job="${name}"}[5s]))`

// rc is a RackedCluster builder: rc(ns, "x", 1).scaleConfig(...).create(t).
type rcBuilder struct{ u *unstructured.Unstructured }

func rc(ns, name string, replicas int64) *rcBuilder {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"replicas": replicas, "racks": []any{
			map[string]any{"name": "a", "members": replicas},
			map[string]any{"name": "b", "members": replicas},
		}},
	}}
	u.SetGroupVersionKind(rackedClusterGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	return &rcBuilder{u}
}

func (b *rcBuilder) scaleConfig(c map[string]any) *rcBuilder {
	_ = unstructured.SetNestedField(b.u.Object, c, "spec", "scaleConfig")
	return b
}

func (b *rcBuilder) annotate(k, v string) *rcBuilder {
	ann := b.u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[k] = v
	b.u.SetAnnotations(ann)
	return b
}

// create retries until the webhooks answer: the app may still be starting.
func (b *rcBuilder) create(t *testing.T) {
	t.Helper()
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		if err := cluster.Client.Create(ctx, b.u.DeepCopy()); err != nil {
			return false, fmt.Sprintf("create %s: %v", b.u.GetName(), err)
		}
		return true, ""
	})
}

// rpsTrigger is an AverageValue trigger on rpsQuery, read from the
// embedded store. (The remote source is proven against a real Prometheus
// in e2e/prometheus.)
func rpsTrigger(threshold float64) map[string]any {
	return map[string]any{"name": "rps", "type": "AverageValue", "source": "promql", "query": rpsQuery, "threshold": threshold}
}

// scale is a RackedCluster's R and its racks' members.
type scale struct {
	Replicas int64
	Members  []int64
}

func getScale(ctx context.Context, ns, name string) (scale, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(rackedClusterGVK)
	if err := cluster.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u); err != nil {
		return scale{}, err
	}
	var s scale
	s.Replicas, _, _ = unstructured.NestedInt64(u.Object, "spec", "replicas")
	racks, _, _ := unstructured.NestedSlice(u.Object, "spec", "racks")
	for _, r := range racks {
		m, _, _ := unstructured.NestedInt64(r.(map[string]any), "members")
		s.Members = append(s.Members, m)
	}
	return s, nil
}

// waitScale waits until R satisfies ok and every rack followed (C1).
func waitScale(t *testing.T, ns, name, want string, ok func(r int64) bool) scale {
	t.Helper()
	var last scale
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		s, err := getScale(ctx, ns, name)
		if err != nil {
			return false, err.Error()
		}
		last = s
		for _, m := range s.Members {
			if m != s.Replicas {
				return false, fmt.Sprintf("racks %v have not followed replicas %d yet", s.Members, s.Replicas)
			}
		}
		return ok(s.Replicas), fmt.Sprintf("replicas %d, racks %v; want %s", s.Replicas, s.Members, want)
	})
	return last
}

// findEvent waits for an event about name with reason whose note passes
// match, and returns its note.
func findEvent(t *testing.T, ns, name, reason string, match func(note string) bool) string {
	t.Helper()
	var note string
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		var list eventsv1.EventList
		if err := cluster.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Name != name || e.Reason != reason {
				continue
			}
			if match(e.Note) {
				note = e.Note
				return true, ""
			}
			seen = append(seen, e.Note)
		}
		return false, fmt.Sprintf("no %s event for %s matches; seen: %q", reason, name, seen)
	})
	return note
}
