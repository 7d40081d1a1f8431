package autoscaler

import (
	"context"
	"testing"
	"time"
)

// TestReviewStopAfterDeadlineStillRemovesKind: a Stop whose context ends
// before the kind's ticks have returned (a manager shutting down, the
// reconciler's 30 s budget) reports it, and the kind still leaves the
// lists once they return, so the same kind can be started again; a later
// Stop waits for that.
func TestReviewStopAfterDeadlineStillRemovesKind(t *testing.T) {
	v := viewOf(t, "RackedCluster")
	a, err := New(Options{Sources: testSources(t, nil)})
	if err != nil {
		t.Fatal(err)
	}
	k, err := a.addKind(v)
	if err != nil {
		t.Fatal(err)
	}
	cancelled := make(chan struct{})
	r := newRunningKind(a, k, func() { close(cancelled) })

	expired, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Stop(expired); err == nil {
		t.Fatal("Stop returned nil while the kind's controller still runs")
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not cancel the kind's controller")
	}
	// The controller's ticks return now.
	r.done <- nil
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if got := len(a.kindList()); got != 0 {
		t.Errorf("%d kinds listed after Stop, want 0", got)
	}
	if _, err := a.addKind(v); err != nil {
		t.Errorf("the kind cannot be started again: %v", err)
	}
}
