package autoscaler

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/scaleplane/scaleplane/scaling"
)

// TestRequestedNamesFollowLiveTriggers: 200 edits of a trigger's metric
// name, each evaluated, then the workload forgotten (deleted): the store's
// requested names and the heap come back to within 5% of where they were
// before the first edit. Names a trigger stopped reading are released at
// once, not kept for the life of the process.
func TestRequestedNamesFollowLiveTriggers(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	a, store := newStoreAutoscaler(t, now)
	k := a.byResource["rackedclusters"]
	ctx := context.Background()
	// Another workload's trigger holds its names throughout.
	other := k.get(types.NamespacedName{Namespace: "shop", Name: "other"})
	k.decide(ctx, nil, other, scaling.Workload{Replicas: ptr(int32(1)), Config: cfg(1, 5).trigger("rps", 1).obj()}, now, time.Time{})

	nn := types.NamespacedName{Namespace: "shop", Name: "cart"}
	edit := func(i int) {
		st := k.get(nn)
		c := cfg(1, 5).trigger("q", 1).query(fmt.Sprintf(`sum(metric_%04d_with_a_long_name_to_make_leaks_visible{namespace="${namespace}"})`, i)).obj()
		k.decide(ctx, nil, st, scaling.Workload{Replicas: ptr(int32(1)), Config: c}, now, time.Time{})
	}
	edit(0)
	k.forget(ctx, nn)
	baseNames := store.Registry().Len()
	baseHeap := heapInUse()

	for i := 1; i <= 200; i++ {
		edit(i)
		if got := store.Registry().Len(); got != baseNames+1 {
			t.Fatalf("after edit %d the registry holds %d names, want the %d of the other workload and 1 of this one's live trigger", i, got, baseNames)
		}
	}
	k.forget(ctx, nn)
	if got := store.Registry().Len(); got != baseNames {
		t.Errorf("after the workload went away the registry holds %d names (%v), want its baseline of %d", got, store.Registry().Names(), baseNames)
	}
	if !store.Registry().Has("http_requests_total") {
		t.Error("the other workload's name was released with this one's")
	}
	heap := heapInUse()
	t.Logf("heap in use: %d bytes before the edits, %d after", baseHeap, heap)
	if float64(heap) > 1.05*float64(baseHeap) {
		t.Errorf("heap in use %d bytes after 200 edits, over 5%% above its baseline of %d", heap, baseHeap)
	}
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
