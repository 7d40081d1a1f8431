package framework

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Exporter serves /metrics on 127.0.0.1 for one test pod: a counter
// http_requests_total growing at the rate the test sets (integrated between
// scrapes, so every scraper sees the same series) and a gauge
// queue_messages.
type Exporter struct {
	srv *httptest.Server

	mu    sync.Mutex
	rate  float64
	total float64
	queue float64
	last  time.Time
}

// NewExporter serves until the test ends.
func NewExporter(t testing.TB, rate float64) *Exporter {
	t.Helper()
	e := &Exporter{rate: rate, last: time.Now()}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *Exporter) serve(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance(time.Now())
	fmt.Fprintf(w, "# TYPE http_requests_total counter\nhttp_requests_total %g\n# TYPE queue_messages gauge\nqueue_messages %g\n", e.total, e.queue)
}

func (e *Exporter) advance(now time.Time) {
	e.total += e.rate * now.Sub(e.last).Seconds()
	e.last = now
}

// SetRate changes the request rate from now on.
func (e *Exporter) SetRate(r float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance(time.Now())
	e.rate = r
}

// SetQueue sets the gauge.
func (e *Exporter) SetQueue(v float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queue = v
}

// Addr is the exporter's 127.0.0.1:port.
func (e *Exporter) Addr() string { return e.srv.Listener.Addr().String() }

// Port is the exporter's port.
func (e *Exporter) Port() int {
	_, p, _ := net.SplitHostPort(e.Addr())
	n, _ := strconv.Atoi(p)
	return n
}

// AddPod creates a running, ready Pod with labels whose /metrics the
// exporter serves (podIP 127.0.0.1, prometheus.io annotations): no kubelet
// runs, so the test writes the status a kubelet would.
func AddPod(t testing.TB, c *Cluster, ns, name string, labels map[string]string, e *Exporter) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels,
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": strconv.Itoa(e.Port())}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app"}}},
	}
	if err := c.Client.Create(ctx, pod); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	pod.Status = corev1.PodStatus{
		Phase:      corev1.PodRunning,
		PodIP:      "127.0.0.1",
		PodIPs:     []corev1.PodIP{{IP: "127.0.0.1"}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
	}
	if err := c.Client.Status().Update(ctx, pod); err != nil {
		t.Fatalf("set pod status: %v", err)
	}
	return pod
}

// Scale is a RackedCluster's replicas and its racks' members.
type Scale struct {
	Replicas int64
	Members  []int64
}

// GetScale reads a RackedCluster's Scale.
func GetScale(ctx context.Context, c *Cluster, ns, name string) (Scale, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(RackedClusterGVK)
	if err := c.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u); err != nil {
		return Scale{}, err
	}
	var s Scale
	s.Replicas, _, _ = unstructured.NestedInt64(u.Object, "spec", "replicas")
	members, err := RackMembers(u)
	if err != nil {
		return Scale{}, err
	}
	s.Members = members
	return s, nil
}

// WaitScale waits until a RackedCluster's replicas satisfy ok and every
// rack followed them (C1), and returns what it saw.
func WaitScale(t testing.TB, c *Cluster, ns, name, want string, ok func(r int64) bool) Scale {
	t.Helper()
	var last Scale
	Eventually(t, 0, func(ctx context.Context) (bool, string) {
		s, err := GetScale(ctx, c, ns, name)
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

// EventNotes lists the messages of the events about name with reason (one
// object seen through both the core/v1 and events.k8s.io/v1 APIs).
func EventNotes(ctx context.Context, c *Cluster, ns, name, reason string) ([]string, error) {
	var list corev1.EventList
	if err := c.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out, nil
}
