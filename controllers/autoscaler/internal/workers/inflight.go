package workers

import (
	"sync"
	"time"
)

// InFlight is the reconciles a kind's workers are running, for the busy
// workers and oldest tick gauges.
type InFlight struct {
	mu     sync.Mutex
	next   uint64
	starts map[uint64]time.Time
}

// Begin records a reconcile starting at now; pass its result to End.
func (f *InFlight) Begin(now time.Time) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.starts == nil {
		f.starts = map[uint64]time.Time{}
	}
	f.next++
	f.starts[f.next] = now
	return f.next
}

// End records the reconcile Begin returned id for as ended.
func (f *InFlight) End(id uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.starts, id)
}

// Busy is how many reconciles run and how long the oldest has been running
// at now (0 when none).
func (f *InFlight) Busy(now time.Time) (int, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var oldest time.Duration
	for _, start := range f.starts {
		oldest = max(oldest, now.Sub(start))
	}
	return len(f.starts), oldest
}
