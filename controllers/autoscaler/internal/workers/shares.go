package workers

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Shares counts, per namespace, the reconciles a kind's workers are
// running, so that one namespace's workloads never hold every worker
// (waiting for their evaluation slots, say) while another namespace's
// ticks queue behind them: the API server's priority and fairness gives
// each flow a share of the seats the same way.
type Shares struct {
	mu      sync.Mutex
	running map[string]int
	// held are, per namespace, the workloads put back while it ran its
	// share, oldest first, each once: the end of one of the namespace's
	// reconciles wakes the oldest at once, so a tick (a wake-up from zero
	// above all) waits for its namespace's worker, not for the retry.
	held   map[string][]types.NamespacedName
	isHeld map[types.NamespacedName]bool
}

// EnterOrHold is Enter for nn's namespace; when it is refused, nn is held
// until one of its namespace's reconciles leaves.
func (w *Shares) EnterOrHold(nn types.NamespacedName, share int) bool {
	if w.Enter(nn.Namespace, share) {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running[nn.Namespace] < share {
		// A reconcile left between enter and this lock: nobody would
		// wake nn, so it takes the worker now.
		w.running[nn.Namespace]++
		return true
	}
	if w.isHeld == nil {
		w.isHeld = map[types.NamespacedName]bool{}
		w.held = map[string][]types.NamespacedName{}
	}
	if !w.isHeld[nn] {
		w.isHeld[nn] = true
		w.held[nn.Namespace] = append(w.held[nn.Namespace], nn)
	}
	return false
}

// LeaveAndNext is Leave, and the oldest workload held for ns, which the
// caller wakes.
func (w *Shares) LeaveAndNext(ns string) (types.NamespacedName, bool) {
	w.Leave(ns)
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.held[ns]
	if len(q) == 0 {
		return types.NamespacedName{}, false
	}
	next := q[0]
	if q = q[1:]; len(q) == 0 {
		delete(w.held, ns)
	} else {
		w.held[ns] = q
	}
	delete(w.isHeld, next)
	return next, true
}

// Enter takes one of ns's share of workers, or reports that ns already
// runs share reconciles.
func (w *Shares) Enter(ns string, share int) bool {
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

// Leave gives back one of ns's share.
func (w *Shares) Leave(ns string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running[ns]--; w.running[ns] <= 0 {
		delete(w.running, ns)
	}
}
