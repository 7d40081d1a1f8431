package scalings

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// Many namespaces within their shares, all left waiting by the process's
// bucket, still share its whole pace between them: the writes kept for
// waiting namespaces hold back the others, not the waiting ones
// themselves, and a namespace refused for the kept writes is not itself
// counted as waiting, so the kept writes stay few.
func TestManyWaitingNamespacesKeepTheProcessesPace(t *testing.T) {
	const namespaces, qps = 200, 50
	s := newShares(func() *rate.Limiter { return rate.NewLimiter(qps/2, qps) }, 1)
	global := rate.NewLimiter(qps, qps)
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for i := range namespaces {
		s.add(fmt.Sprint("ns", i))
	}
	taken := 0
	const step = 10 * time.Millisecond
	const span = 20 * time.Second
	for at := time.Duration(0); at < span; at += step {
		now := t0.Add(at)
		for i := range namespaces {
			if ok, _, _ := s.take(fmt.Sprint("ns", i), 1, global, now); ok {
				taken++
			}
		}
	}
	// The process's pace over the span, and its first burst.
	if want := qps*int(span/time.Second) + qps; taken < want*9/10 {
		t.Errorf("%d namespaces took %d writes in %s, want about %d (the process's pace)", namespaces, taken, span, want)
	}
	if len(s.waiting) > namespaces {
		t.Errorf("%d waiting entries for %d namespaces", len(s.waiting), namespaces)
	}
}
