package foreign

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// hangBound is how long a call may take before the test calls it hung: a
// hang detector, not a timing assertion.
const hangBound = 10 * time.Second

// within runs f in a goroutine and fails the test when it has not returned
// within hangBound.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(hangBound):
		t.Fatalf("%s did not return within %s: the worker is wedged", what, hangBound)
	}
}

// slowMapper is a RESTMapper whose RESTMapping waits for release: a
// discovery call to a slow API server.
type slowMapper struct {
	meta.RESTMapper
	asked   chan struct{}
	release chan struct{}
}

func (m slowMapper) RESTMapping(schema.GroupKind, ...string) (*meta.RESTMapping, error) {
	m.asked <- struct{}{}
	<-m.release
	return &meta.RESTMapping{}, nil
}

// While one worker waits for the RESTMapper to say whether KEDA is served,
// the others go on with the previous answer instead of queueing behind it.
func TestForeignFinderDoesNotQueueBehindDiscovery(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	m := slowMapper{asked: make(chan struct{}, 1), release: make(chan struct{})}
	f := &Finder{Mapper: m, Interval: time.Minute, Now: func() time.Time { return now }}
	first := make(chan bool, 1)
	go func() {
		served, err := f.kedaServed()
		if err != nil {
			t.Errorf("kedaServed: %v", err)
		}
		first <- served
	}()
	select {
	case <-m.asked:
	case <-time.After(hangBound):
		t.Fatal("the mapper was never asked")
	}
	var second bool
	within(t, "a second worker's kedaServed", func() { second, _ = f.kedaServed() })
	close(m.release)
	var got []bool
	select {
	case served := <-first:
		got = []bool{second, served}
	case <-time.After(hangBound):
		t.Fatal("the first worker did not return once the mapper did")
	}
	within(t, "a third worker's kedaServed", func() {
		third, _ := f.kedaServed()
		got = append(got, third)
	})
	// The second worker had the old answer; the first and every later one
	// the mapper's.
	if diff := cmp.Diff([]bool{false, true, true}, got); diff != "" {
		t.Errorf("KEDA served, per worker (-want +got):\n%s", diff)
	}
}
