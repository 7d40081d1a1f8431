package autoscaler

import (
	"sync"
	"time"
)

// workerShareRetry is how soon a reconcile deferred for its namespace's
// worker share is tried again: long enough not to spin, short against any
// polling interval.
const workerShareRetry = 500 * time.Millisecond

// workerShares counts, per namespace, the reconciles a kind's workers are
// running, so that one namespace's workloads never hold every worker
// (waiting for their evaluation slots, say) while another namespace's
// ticks queue behind them: the API server's priority and fairness gives
// each flow a share of the seats the same way.
type workerShares struct {
	mu      sync.Mutex
	running map[string]int
}

// enter takes one of ns's share of workers, or reports that ns already
// runs share reconciles.
func (w *workerShares) enter(ns string, share int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running == nil {
		w.running = map[string]int{}
	}
	if w.running[ns] >= share {
		return false
	}
	w.running[ns]++
	return true
}

func (w *workerShares) leave(ns string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running[ns]--; w.running[ns] <= 0 {
		delete(w.running, ns)
	}
}

// workerShare is one namespace's share of a kind's workers: half of them,
// at least one.
func (a *Autoscaler) workerShare() int { return max(1, a.opts.MaxConcurrentReconciles/2) }
