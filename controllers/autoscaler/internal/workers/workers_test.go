package workers

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// A namespace at its share is held, each workload once and oldest first,
// and handed back one at a time as the namespace's reconciles leave; the
// other namespaces enter meanwhile.
func TestSharesHoldANamespaceAtItsShare(t *testing.T) {
	var s Shares
	a1, a2, a3 := types.NamespacedName{Namespace: "a", Name: "1"}, types.NamespacedName{Namespace: "a", Name: "2"}, types.NamespacedName{Namespace: "a", Name: "3"}
	type step struct {
		Entered []bool
		Next    []types.NamespacedName
	}
	var got step
	for _, nn := range []types.NamespacedName{a1, a2, a3, a2, {Namespace: "b", Name: "1"}} {
		got.Entered = append(got.Entered, s.EnterOrHold(nn, 1))
	}
	for range 3 {
		if nn, ok := s.LeaveAndNext("a"); ok {
			got.Next = append(got.Next, nn)
		}
	}
	want := step{Entered: []bool{true, false, false, false, true}, Next: []types.NamespacedName{a2, a3}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A call that ignores its context is left running: Bounded returns at its
// timeout with an error saying so.
func TestBoundedReturnsAtItsTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	_, err := Bounded(context.Background(), 10*time.Millisecond, func(context.Context) (int, error) {
		<-release
		return 1, nil
	})
	if err == nil {
		t.Fatal("a call that never returned gave no error")
	}
}
