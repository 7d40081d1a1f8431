package controllers

import (
	"runtime"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// registered counts the registry's entries for index name.
func registered(name string) int {
	n := 0
	indexes.Range(func(k, _ any) bool {
		if k.(indexKey).name == name {
			n++
		}
		return true
	})
	return n
}

// The index registry registers an index once per manager, and keeps
// nothing of a manager once the manager is dropped: its field indexer
// (the manager's cache) is collected and its entry goes with it, so a
// suite that builds many managers does not keep their caches alive.
func TestIndexRegistryLetsADiscardedManagerGo(t *testing.T) {
	const name = "scaleplane.io/test-collectable-index"
	collected := make(chan struct{})
	func() {
		fi := &refusingIndexer{names: map[string]bool{}}
		mgr := indexerManager{indexer: fi}
		for i, want := range []bool{true, false} {
			first, err := indexOnce(mgr, &autoscalingv2.HorizontalPodAutoscaler{}, name, IndexHPATarget)
			if err != nil || first != want {
				t.Fatalf("indexOnce call %d = %t, %v; want %t, nil", i+1, first, err, want)
			}
		}
		runtime.AddCleanup(fi, func(ch chan struct{}) { close(ch) }, collected)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for gone := false; !gone || registered(name) > 0; {
		runtime.GC()
		select {
		case <-collected:
			gone = true
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 20s of collections: field indexer collected %t, %d registry entries left; the registry must not keep a dropped manager's indexer", gone, registered(name))
		}
		runtime.Gosched()
	}
}
