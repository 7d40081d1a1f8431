package autoscaler

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// workerShareRetry is how soon a reconcile deferred for its namespace's
// worker share is tried again when nothing woke it before: long enough not
// to spin, short against any polling interval. Normally the end of one of
// the namespace's reconciles wakes it first (workerShares.held).
const workerShareRetry = 500 * time.Millisecond

// workerShares counts, per namespace, the reconciles a kind's workers are
// running, so that one namespace's workloads never hold every worker
// (waiting for their evaluation slots, say) while another namespace's
// ticks queue behind them: the API server's priority and fairness gives
// each flow a share of the seats the same way.
type workerShares struct {
	mu      sync.Mutex
	running map[string]int
	// held are, per namespace, the workloads put back while it ran its
	// share, oldest first, each once: the end of one of the namespace's
	// reconciles wakes the oldest at once, so a tick (a wake-up from zero
	// above all) waits for its namespace's worker, not for the retry.
	held   map[string][]types.NamespacedName
	isHeld map[types.NamespacedName]bool
}

// enterOrHold is enter for nn's namespace; when it is refused, nn is held
// until one of its namespace's reconciles leaves.
func (w *workerShares) enterOrHold(nn types.NamespacedName, share int) bool {
	if w.enter(nn.Namespace, share) {
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

// leaveAndNext is leave, and the oldest workload held for ns, which the
// caller wakes.
func (w *workerShares) leaveAndNext(ns string) (types.NamespacedName, bool) {
	w.leave(ns)
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

// leaveShare ends a reconcile's hold on its namespace's share and wakes
// the workload held longest for it, if any (when the wake channel is full,
// its retry brings it back).
func (k *kindLoop) leaveShare(ns string) {
	nn, ok := k.shares.leaveAndNext(ns)
	if !ok {
		return
	}
	u := k.newObject()
	u.SetNamespace(nn.Namespace)
	u.SetName(nn.Name)
	k.wakeObject(u)
}
