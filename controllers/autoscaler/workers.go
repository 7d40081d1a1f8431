package autoscaler

import "time"

// The loop's workers: each namespace's share of them (workers.Shares), the
// reconciles in flight (workers.InFlight) and the bounded calls to
// scalers (workers.Bounded), from package internal/workers.

// workerShareRetry is how soon a reconcile deferred for its namespace's
// worker share is tried again when nothing woke it before: long enough not
// to spin, short against any polling interval. Normally the end of one of
// the namespace's reconciles wakes it first (workers.Shares).
const workerShareRetry = 500 * time.Millisecond

// workerShare is one namespace's share of a kind's workers: half of them,
// at least one.
func (a *Autoscaler) workerShare() int { return max(1, a.opts.MaxConcurrentReconciles/2) }

// leaveShare ends a reconcile's hold on its namespace's share and wakes
// the workload held longest for it, if any (when the wake channel is full,
// its retry brings it back).
func (k *kindLoop) leaveShare(ns string) {
	nn, ok := k.shares.LeaveAndNext(ns)
	if !ok {
		return
	}
	u := k.newObject()
	u.SetNamespace(nn.Namespace)
	u.SetName(nn.Name)
	k.wakeObject(u)
}
