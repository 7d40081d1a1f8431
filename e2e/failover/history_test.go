package failover

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

// version is one stored version of a scaled workload, as a watch delivers
// every one of them in order.
type version struct {
	ResourceVersion string
	Replicas        int64
	Racks           []int64
}

// history records every version of the watched workloads from their
// creation on.
type history struct {
	mu       sync.Mutex
	versions map[string][]version
	err      error
	cancel   context.CancelFunc
	done     chan struct{}
}

// watchHistory starts recording the RackedClusters of ns that match
// selector. Start it before creating them.
func watchHistory(t *testing.T, ns, selector string) *history {
	t.Helper()
	dc, err := dynamic.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	ri := dc.Resource(rackedClusters).Namespace(ns)
	list, err := ri.List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("list to start the history: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.GetResourceVersion(), &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = selector
			return ri.Watch(ctx, opts)
		},
	})
	if err != nil {
		cancel()
		t.Fatalf("watch: %v", err)
	}
	h := &history{versions: map[string][]version{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		defer rw.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-rw.ResultChan():
				if !ok {
					return
				}
				h.record(ev)
			}
		}
	}()
	t.Cleanup(h.stop)
	return h
}

func (h *history) record(ev watch.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	u, ok := ev.Object.(*unstructured.Unstructured)
	if ev.Type == watch.Error || !ok {
		// A gap (the watch fell behind compaction) would make every
		// check below meaningless.
		if h.err == nil {
			h.err = fmt.Errorf("watch broke, history incomplete: %v", ev.Object)
		}
		return
	}
	if ev.Type == watch.Deleted {
		return
	}
	replicas, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	racks, err := framework.RackMembers(u)
	if err != nil && h.err == nil {
		h.err = fmt.Errorf("%s at %s: %w", u.GetName(), u.GetResourceVersion(), err)
	}
	h.versions[u.GetName()] = append(h.versions[u.GetName()], version{ResourceVersion: u.GetResourceVersion(), Replicas: replicas, Racks: racks})
}

func (h *history) stop() {
	h.cancel()
	<-h.done
}

// of returns the versions recorded for one workload so far.
func (h *history) of(name string) ([]version, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.versions[name]), h.err
}

// fanOuts counts the writes that changed the racks of one workload.
func fanOuts(vs []version) int {
	n := 0
	for i := 1; i < len(vs); i++ {
		if !slices.Equal(vs[i].Racks, vs[i-1].Racks) {
			n++
		}
	}
	return n
}

// checkHistory lists how one workload's versions break C1 across the
// failover, given the replicas of every kubectl scale on it that
// succeeded, in order (each larger than the one before, so any value
// written twice or after a larger one is visible):
//
//   - every version has all racks equal: the fan-out is one write, never
//     half-applied;
//   - spec.replicas takes exactly the scaled values, in order, after its
//     initial one: every scale applied once, none lost, none added;
//   - every write that changes the racks sets them to that version's
//     spec.replicas, changes nothing else of the two, and sets a size larger
//     than any written before: no scale is fanned out twice and no older
//     scale after a newer one (a leader that came back from the dead, or
//     two leaders at once, would show here);
//   - at most one rack write per scale;
//   - the last version has spec.replicas and every rack at the last scale.
func checkHistory(vs []version, scaled []int64) []string {
	var problems []string
	if len(vs) == 0 {
		return []string{"no version recorded"}
	}
	for _, v := range vs {
		for _, m := range v.Racks {
			if m != v.Racks[0] {
				problems = append(problems, fmt.Sprintf("version %s has racks %v: a half-applied fan-out", v.ResourceVersion, v.Racks))
				break
			}
		}
	}
	var replicas []int64
	for i, v := range vs {
		if i == 0 || v.Replicas != vs[i-1].Replicas {
			replicas = append(replicas, v.Replicas)
		}
	}
	if got := replicas[1:]; !slices.Equal(got, scaled) {
		problems = append(problems, fmt.Sprintf("spec.replicas went through %v after %d, want the scaled values %v", got, replicas[0], scaled))
	}
	highest := int64(-1) // the largest rack size written so far
	if len(vs[0].Racks) > 0 {
		highest = vs[0].Racks[0]
	}
	for i := 1; i < len(vs); i++ {
		prev, v := vs[i-1], vs[i]
		if slices.Equal(v.Racks, prev.Racks) || len(v.Racks) == 0 {
			continue
		}
		if v.Replicas != prev.Replicas {
			problems = append(problems, fmt.Sprintf("version %s changed spec.replicas %d -> %d and the racks %v -> %v in one write: not a fan-out", v.ResourceVersion, prev.Replicas, v.Replicas, prev.Racks, v.Racks))
		}
		if v.Racks[0] != v.Replicas {
			problems = append(problems, fmt.Sprintf("version %s set the racks to %v while spec.replicas is %d", v.ResourceVersion, v.Racks, v.Replicas))
		}
		if v.Racks[0] <= highest {
			problems = append(problems, fmt.Sprintf("version %s set the racks %v -> %v after they had been %d: a scale fanned out again or after a newer one", v.ResourceVersion, prev.Racks, v.Racks, highest))
		}
		highest = max(highest, v.Racks[0])
	}
	if n := fanOuts(vs); n > len(scaled) {
		problems = append(problems, fmt.Sprintf("%d rack writes for %d scales", n, len(scaled)))
	}
	if len(scaled) > 0 {
		want := scaled[len(scaled)-1]
		last := vs[len(vs)-1]
		if last.Replicas != want || len(last.Racks) == 0 || last.Racks[0] != want {
			problems = append(problems, fmt.Sprintf("last version %s has spec.replicas %d and racks %v, want %d everywhere", last.ResourceVersion, last.Replicas, last.Racks, want))
		}
	}
	return problems
}
