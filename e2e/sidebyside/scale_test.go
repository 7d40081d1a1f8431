package sidebyside

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// scaleOutVar names the file the scale test's figures go to.
const scaleOutVar = "SCALEPLANE_SCALE_OUT"

// scaleHeapVar names a file for scaleplane's heap profile, taken once every
// workload has its Scaling: what it keeps per workload.
const scaleHeapVar = "SCALEPLANE_SCALE_HEAP"

// firsts records, through a watch, when each object of a namespace first
// satisfied ok.
type firsts struct {
	mu   sync.Mutex
	at   map[string]time.Time
	last time.Time
}

func watchFirsts(t *testing.T, gvr schema.GroupVersionResource, ns string, ok func(u *unstructured.Unstructured) bool) *firsts {
	t.Helper()
	dc, err := dynamic.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &firsts{at: map[string]time.Time{}}
	go func() {
		rv := ""
		for ctx.Err() == nil {
			w, err := dc.Resource(gvr).Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
			if err != nil {
				time.Sleep(100 * time.Millisecond) // a retry pause, not synchronisation
				continue
			}
			for ev := range w.ResultChan() {
				u, isU := ev.Object.(*unstructured.Unstructured)
				if !isU {
					continue
				}
				rv = u.GetResourceVersion()
				if (ev.Type != watch.Added && ev.Type != watch.Modified) || !ok(u) {
					continue
				}
				f.mu.Lock()
				if _, seen := f.at[u.GetName()]; !seen {
					now := time.Now()
					f.at[u.GetName()] = now
					f.last = now
				}
				f.mu.Unlock()
			}
			w.Stop()
		}
	}()
	return f
}

func (f *firsts) count() (int, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.at), f.last
}

// fannedOut: every rack has spec.replicas members (C1).
func fannedOut(u *unstructured.Unstructured) bool {
	r, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	members, err := framework.RackMembers(u)
	if err != nil || len(members) == 0 {
		return false
	}
	for _, m := range members {
		if m != r {
			return false
		}
	}
	return true
}

// Many workloads at once: N RackedClusters (10,000 unless
// SCALEPLANE_SCALE_N says otherwise) created on 16 client workers through
// scaleplane's webhooks, each created with racks that do not follow its
// replicas. The test waits until every one is fanned out (racks follow,
// C1) and has its Scaling, and reports the time to the last of them,
// scaleplane's peak RSS and CPU, the API-server writes scaleplane caused
// per minute, and admission p99 (API server's webhook histogram and the
// client's create latency).
func TestManyWorkloadsAdmittedFannedOutAndGivenScalings(t *testing.T) {
	needCluster(t)
	n := envInt(t, scaleNVar, 10000)
	c, cs := fastClient(t)
	ns := "sbs-scale"
	createNamespace(t, c, ns)
	sp := startScaleplane(t, "scale", childSettings{Workloads: n, PollSeconds: 15})
	fanned := watchFirsts(t, rackedClusters, ns, fannedOut)
	scalings := watchFirsts(t, v1alpha1.GroupVersion.WithResource("scalings"), ns, func(*unstructured.Unstructured) bool { return true })

	// One workload first: it waits for the webhooks to serve.
	newWorkload := func(name string) *unstructured.Unstructured {
		return framework.RackedCluster(ns, name, 3, 1, 1)
	}
	if err := withRetry(context.Background(), func(ctx context.Context) error {
		if sp.exited() {
			return fmt.Errorf("scaleplane exited; its log ends:\n%s", sp.logTail())
		}
		return c.Create(ctx, newWorkload("probe"))
	}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 2*time.Minute, func(context.Context) (bool, string) {
		got, _ := scalings.count()
		return got == 1, "the first workload has no Scaling yet"
	})

	before := apiMetrics(t, cs, "")
	cpu0 := cpuOf(t, sp.pid())
	start := time.Now()
	var mu sync.Mutex
	var latencies []time.Duration
	parallel(t, workloadNames(n), func(ctx context.Context, name string) error {
		t0 := time.Now()
		err := c.Create(ctx, newWorkload(name))
		d := time.Since(t0)
		mu.Lock()
		latencies = append(latencies, d)
		mu.Unlock()
		return err
	})
	created := time.Since(start)
	afterCreate := apiMetrics(t, cs, "")
	framework.Eventually(t, 30*time.Minute, func(context.Context) (bool, string) {
		f, _ := fanned.count()
		s, _ := scalings.count()
		return f == n+1 && s == n+1, fmt.Sprintf("%d of %d fanned out, %d have their Scaling", f, n+1, s)
	})
	_, lastFanned := fanned.count()
	_, lastScaling := scalings.count()
	done := lastFanned
	if lastScaling.After(done) {
		done = lastScaling
	}
	after := apiMetrics(t, cs, "")
	cpu := cpuOf(t, sp.pid()) - cpu0
	rss := rssOf(t, sp.pid())
	elapsed := done.Sub(start)
	writes := after.Requests.Writes - before.Requests.Writes - float64(n)

	var b strings.Builder
	fmt.Fprintf(&b, "scale: N=%d workloads created on 16 workers\n", n)
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "creation took\t%s\t(%.0f creates/s)\n", created.Round(time.Millisecond), float64(n)/created.Seconds())
	fmt.Fprintf(w, "last fan-out after\t%s\n", lastFanned.Sub(start).Round(time.Millisecond))
	fmt.Fprintf(w, "last Scaling after\t%s\n", lastScaling.Sub(start).Round(time.Millisecond))
	fmt.Fprintf(w, "admission p50 / p99 (API server, scaleplane's webhooks)\t%.1f ms / %.1f ms\n",
		1000*afterCreate.Admission.Sub(before.Admission).Quantile(0.5), 1000*afterCreate.Admission.Sub(before.Admission).Quantile(0.99))
	fmt.Fprintf(w, "create p50 / p99 (client)\t%s / %s\n", Percentile(latencies, 0.5).Round(100*time.Microsecond), Percentile(latencies, 0.99).Round(100*time.Microsecond))
	fmt.Fprintf(w, "scaleplane peak RSS\t%.0f MiB\n", float64(rss)/(1<<20))
	fmt.Fprintf(w, "scaleplane CPU until the last Scaling and after\t%.1f s\n", cpu.Seconds())
	fmt.Fprintf(w, "API-server writes besides the test's creates\t%.0f (%.0f/min over %s)\n", writes, writes/elapsed.Minutes(), elapsed.Round(time.Second))
	fmt.Fprintf(w, "top writes\t%s\n", strings.Join(TopWrites(before.WritesBy, after.WritesBy, 6), ", "))
	_ = w.Flush()
	t.Log("\n" + b.String())
	fmt.Println(b.String())
	out := os.Getenv(scaleOutVar)
	if out == "" {
		out = filepath.Join(os.TempDir(), "scaleplane-scale-N"+strconv.Itoa(n)+".txt")
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("figures written to %s", out)
	if heap := os.Getenv(scaleHeapVar); heap != "" {
		sp.heapProfile(t, heap)
		t.Logf("scaleplane's heap profile written to %s (go tool pprof -sample_index=inuse_space)", heap)
	}
}
