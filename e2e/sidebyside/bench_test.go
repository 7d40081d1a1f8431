package sidebyside

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

// Every workload's metric: bench_queue, one gauge per workload, served by
// one exporter at /metrics/<namespace>/<name>. At threshold 10 per replica
// the two values give 2 and 4 replicas; a step flips one for the other.
const (
	metricName = "bench_queue"
	threshold  = 10
	lowValue   = 15
	highValue  = 35
	lowCount   = 2
	highCount  = 4
)

func countFor(v float64) int64 {
	if v == highValue {
		return highCount
	}
	return lowCount
}

// exporter serves every workload's gauge.
type exporter struct {
	srv *httptest.Server
	mu  sync.Mutex
	v   map[string]float64
}

func newExporter(t *testing.T) *exporter {
	e := &exporter{v: map[string]float64{}}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.URL.Path, "/metrics/")
		e.mu.Lock()
		v, ok := e.v[key]
		e.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "# TYPE %s gauge\n%s %g\n", metricName, metricName, v)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *exporter) set(ns, name string, v float64) {
	e.mu.Lock()
	e.v[ns+"/"+name] = v
	e.mu.Unlock()
}

func (e *exporter) get(ns, name string) float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.v[ns+"/"+name]
}

func (e *exporter) addr() string { return e.srv.Listener.Addr().String() }

// targets are Prometheus' scrape targets for the workloads: the same
// labels scaleplane's scraper gives their pods (namespace, job=<workload>).
func (e *exporter) targets(ns string, names []string) []framework.PrometheusTarget {
	out := make([]framework.PrometheusTarget, len(names))
	for i, n := range names {
		out[i] = framework.PrometheusTarget{Targets: []string{e.addr()}, Labels: map[string]string{
			"namespace": ns, "job": n, "__metrics_path__": "/metrics/" + ns + "/" + n}}
	}
	return out
}

// recorder keeps, through one watch, when each RackedCluster of a
// namespace took each value of spec.replicas.
type recorder struct {
	mu      sync.Mutex
	changes map[string][]change
	cancel  context.CancelFunc
}

type change struct {
	replicas int64
	at       time.Time
}

var rackedClusters = schema.GroupVersionResource{Group: "samples.scaleplane.io", Version: "v1alpha1", Resource: "rackedclusters"}

func record(t *testing.T, ns string) *recorder {
	t.Helper()
	dc, err := dynamic.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &recorder{changes: map[string][]change{}, cancel: cancel}
	t.Cleanup(cancel)
	go func() {
		rv := ""
		for ctx.Err() == nil {
			w, err := dc.Resource(rackedClusters).Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				time.Sleep(100 * time.Millisecond) // a retry pause, not synchronisation
				continue
			}
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				rv = u.GetResourceVersion()
				if ev.Type != watch.Added && ev.Type != watch.Modified {
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
			w.Stop()
		}
	}()
	return r
}

// reached is when name first held want at or after since.
func (r *recorder) reached(name string, want int64, since time.Time) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.changes[name] {
		if c.replicas == want && !c.at.Before(since) {
			return c.at, true
		}
	}
	return time.Time{}, false
}

// current is name's last seen count.
func (r *recorder) current(name string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	cs := r.changes[name]
	if len(cs) == 0 {
		return -1
	}
	return cs[len(cs)-1].replicas
}

// waitAll waits until every named workload holds the count its metric
// asks for. An autoscaler that never gets them all there (one that flaps
// under load) is measured anyway: past timeout the shortfall is logged.
func waitAll(t *testing.T, rec *recorder, ex *exporter, ns string, names []string, timeout time.Duration, what string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		off := 0
		example := ""
		for _, n := range names {
			if want := countFor(ex.get(ns, n)); rec.current(n) != want {
				off++
				example = fmt.Sprintf("%s at %d, want %d", n, rec.current(n), want)
			}
		}
		last = fmt.Sprintf("%s: %d of %d workloads not at their count (e.g. %s)", what, off, len(names), example)
		return off == 0, nil
	})
	if err != nil {
		t.Logf("after %s, measuring anyway: %s", timeout, last)
	}
}

// fastClient is an admin client with a QPS that does not make the
// benchmark's setup the bottleneck.
func fastClient(t *testing.T) (client.Client, *kubernetes.Clientset) {
	t.Helper()
	cfg := *cluster.Config
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.New(&cfg, client.Options{Scheme: cluster.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, cs
}

// parallel runs do for every name on 16 workers and fails on the first
// error.
func parallel(t *testing.T, names []string, do func(ctx context.Context, name string) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	work := make(chan string)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				if err := do(context.Background(), n); err != nil {
					errs <- fmt.Errorf("%s: %w", n, err)
				}
			}
		}()
	}
	for _, n := range names {
		work <- n
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// withRetry retries do until it succeeds or a minute passes: the
// webhooks may still be starting.
func withRetry(ctx context.Context, do func(ctx context.Context) error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := do(ctx)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond) // a retry pause, not synchronisation
	}
}

func workloadNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("w%05d", i)
	}
	return out
}

// createNamespace makes a namespace of a fixed name for one arm.
func createNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// apiMetrics reads the API server's /metrics.
func apiMetrics(t *testing.T, cs *kubernetes.Clientset, webhookPrefix string) APIServerMetrics {
	t.Helper()
	data, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("read the API server's metrics: %v", err)
	}
	m, err := ParseAPIServerMetrics(strings.NewReader(string(data)), webhookPrefix)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// onePID finds exactly one process of this control plane.
func onePID(t *testing.T, base string, want ...string) int {
	t.Helper()
	pids, err := FindPIDs(base, want...)
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) != 1 {
		t.Fatalf("%s with %q: found pids %v, want one", base, want, pids)
	}
	return pids[0]
}

// cpuOf sums the CPU time of pids; a process that has gone counts 0.
func cpuOf(t *testing.T, pids ...int) time.Duration {
	t.Helper()
	var sum time.Duration
	for _, p := range pids {
		d, err := ProcessCPU(p)
		if err != nil {
			t.Logf("CPU of pid %d: %v", p, err)
			continue
		}
		sum += d
	}
	return sum
}

func rssOf(t *testing.T, pids ...int) int64 {
	t.Helper()
	var sum int64
	for _, p := range pids {
		r, err := ProcessPeakRSS(p)
		if err != nil {
			t.Fatalf("peak RSS of pid %d: %v", p, err)
		}
		sum += r
	}
	return sum
}

// sample is what the benchmark reads at the edges of a window.
type sample struct {
	at        time.Time
	own       time.Duration // the arm's own processes
	kcm       time.Duration
	prom      time.Duration
	apiserver time.Duration
	api       APICounts
	writes    map[string]float64
}

type probes struct {
	own                  []int
	kcm, prom, apiserver int
	cs                   *kubernetes.Clientset
	// atRest, when set, is called as the rest window starts.
	atRest func()
}

func (p probes) read(t *testing.T) sample {
	m := apiMetrics(t, p.cs, "")
	return sample{at: time.Now(), own: cpuOf(t, p.own...), kcm: cpuOf(t, p.kcm), prom: cpuOf(t, p.prom), apiserver: cpuOf(t, p.apiserver), api: m.Requests, writes: m.WritesBy}
}

// rates is per minute of wall time between two samples.
type rates struct {
	own, kcm, prom, apiserver float64 // CPU seconds per minute
	api                       APICounts
}

func between(a, b sample) rates {
	min := b.at.Sub(a.at).Minutes()
	return rates{
		own:       (b.own - a.own).Seconds() / min,
		kcm:       (b.kcm - a.kcm).Seconds() / min,
		prom:      (b.prom - a.prom).Seconds() / min,
		apiserver: (b.apiserver - a.apiserver).Seconds() / min,
		api:       APICounts{All: (b.api.All - a.api.All) / min, Writes: (b.api.Writes - a.api.Writes) / min},
	}
}

func mustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}
