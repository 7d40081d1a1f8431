package controllers_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

var rackedClusters = schema.GroupVersionResource{Group: "samples.scaleplane.io", Version: "v1alpha1", Resource: "rackedclusters"}

const demo = `
apiVersion: samples.scaleplane.io/v1alpha1
kind: RackedCluster
metadata:
  name: demo
spec:
  replicas: 3
  racks:
  - {name: a, members: 3}
  - {name: b, members: 3}
  - {name: c, members: 3}
`

// C1: kubectl scale writes only spec.replicas through /scale, which no
// webhook on the main resource sees; the controller carries it to every
// rack. No webhook configuration is installed in this package, so this also
// shows the webhook-outage case: a /scale write still reaches the racks.
// 50 more scale calls measure the latency from the call to the write that
// brings the last rack to the new size, timestamped by a watch on the
// object (no polling granularity). Logged, never asserted.
func TestKubectlScaleFansOutToEveryRack(t *testing.T) {
	startManager(t, controllers.Options{})
	ns := cluster.Namespace(t)
	kubectlApply(t, ns, demo)

	kubectl(t, "scale", "-n", ns, "rackedcluster/demo", "--replicas=5")
	waitRacks(t, ns, "demo", 5)
	waitEvent(t, ns, "demo", "Normal", "ScaledGroups", "a=3, b=3, c=3 -> 5")

	dyn, err := dynamic.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cur, err := dyn.Resource(rackedClusters).Namespace(ns).Get(ctx, "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := dyn.Resource(rackedClusters).Namespace(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector:   "metadata.name=demo",
		ResourceVersion: cur.GetResourceVersion(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Events are timestamped as they arrive, on their own goroutine, so a
	// kubectl call still running does not delay the stamps.
	type stamped struct {
		at time.Time
		ev watch.Event
	}
	events := make(chan stamped, 1024)
	go func() {
		defer close(events)
		for ev := range w.ResultChan() {
			events <- stamped{time.Now(), ev}
		}
	}()

	const runs = 50
	var total, controller []time.Duration
	for i := range runs {
		n := int64(6 + i%2) // alternate so every call changes something
		start := time.Now()
		kubectl(t, "scale", "-n", ns, "rackedcluster/demo", fmt.Sprintf("--replicas=%d", n))
		var scaled time.Time
		for done := false; !done; {
			select {
			case se, ok := <-events:
				if !ok {
					t.Fatal("watch closed")
				}
				if se.ev.Type != watch.Modified {
					continue
				}
				at := se.at
				u := se.ev.Object.(*unstructured.Unstructured)
				r, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
				if r == n && scaled.IsZero() {
					scaled = at
				}
				if r == n && allEqual(members(u), n) {
					total = append(total, at.Sub(start))
					controller = append(controller, at.Sub(scaled))
					done = true
				}
			case <-ctx.Done():
				t.Fatalf("run %d: racks did not reach %d", i, n)
			}
		}
	}
	t.Logf("kubectl scale -> every rack updated, %d runs: p50 %s, p99 %s, max %s (includes starting kubectl)",
		runs, percentile(total, 50), percentile(total, 99), percentile(total, 100))
	t.Logf("/scale write observed -> every rack updated, %d runs: p50 %s, p99 %s, max %s (the controller's share)",
		runs, percentile(controller, 50), percentile(controller, 99), percentile(controller, 100))
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i].Round(100 * time.Microsecond)
}

// C1 under contention: 100 kubectl scale calls (the /scale subresource)
// with random values, shuffled among 30 spec edits (merge patches of
// spec.replicas, and edits of the racks themselves), 8 at a time. Every
// fan-out that conflicts with another write is decided again on a fresh
// read, so when the dust settles every rack equals the final
// spec.replicas, and that value is one somebody wrote: nothing was lost and
// nothing invented.
func TestConcurrentScaleAndEditsLoseNoUpdate(t *testing.T) {
	startManager(t, controllers.Options{})
	ns := cluster.Namespace(t)
	kubectlApply(t, ns, demo)
	waitEvent(t, ns, "demo", "Normal", "StatusReplicasUpdated")

	const scales, edits, parallel = 100, 30, 8
	type op struct {
		args     []string
		replicas int // the spec.replicas it writes; 0 for a racks edit
	}
	var ops []op
	for range scales {
		n := 1 + rand.IntN(20)
		ops = append(ops, op{[]string{"scale", "-n", ns, "rackedcluster/demo", fmt.Sprintf("--replicas=%d", n)}, n})
	}
	for i := range edits {
		n := 1 + rand.IntN(20)
		if i%2 == 0 {
			ops = append(ops, op{[]string{"patch", "-n", ns, "rackedcluster/demo", "--type=merge", "-p", fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)}, n})
			continue
		}
		ops = append(ops, op{[]string{"patch", "-n", ns, "rackedcluster/demo", "--type=merge", "-p",
			fmt.Sprintf(`{"spec":{"racks":[{"name":"a","members":%d},{"name":"b","members":%d},{"name":"c","members":%d}]}}`, n, rand.IntN(20), rand.IntN(20))}, 0})
	}
	rand.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
	written := map[int64]bool{3: true} // the initial value
	for _, o := range ops {
		if o.replicas > 0 {
			written[int64(o.replicas)] = true
		}
	}

	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	errs := make(chan error, len(ops))
	for _, o := range ops {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := cluster.Kubectl(context.Background(), o.args...); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		u, err := get(ctx, "RackedCluster", ns, "demo")
		if err != nil {
			return false, err.Error()
		}
		r, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		ms := members(u)
		return allEqual(ms, r) && written[r], fmt.Sprintf("spec.replicas %d (written by someone: %v), racks %v", r, written[r], ms)
	})
	t.Logf("controller counters for RackedCluster so far in this process: %s", scaleplaneCounters(t, "RackedCluster"))
}

// C1 for a kind without groups, with a webhook outage: a WorkerGroup's
// pinned scalePolicy follows kubectl scale, because a pinned config means
// "no autoscaling range".
func TestKubectlScaleRepinsPinnedConfig(t *testing.T) {
	startManager(t, controllers.Options{})
	ns := cluster.Namespace(t)
	kubectlApply(t, ns, `
apiVersion: samples.scaleplane.io/v1alpha1
kind: WorkerGroup
metadata:
  name: workers
spec:
  replicas: 2
  scalePolicy: {minReplicas: 2, maxReplicas: 2}
`)
	kubectl(t, "scale", "-n", ns, "workergroup/workers", "--replicas=4")
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		u, err := get(ctx, "WorkerGroup", ns, "workers")
		if err != nil {
			return false, err.Error()
		}
		policy, _, _ := unstructured.NestedMap(u.Object, "spec", "scalePolicy")
		return policy["minReplicas"] == int64(4) && policy["maxReplicas"] == int64(4), fmt.Sprintf("scalePolicy %v", policy)
	})
	// A kind without member groups: the re-pin is Scaled, not ScaledGroups.
	waitEvent(t, ns, "workers", "Normal", "Scaled", "spec.scalePolicy pinned 2 -> 4")
}
