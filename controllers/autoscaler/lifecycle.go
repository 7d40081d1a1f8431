package autoscaler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/workers"
	"github.com/scaleplane/scaleplane/scaling"
)

// A workload's memory from first sight to deletion, and the rules that keep
// a worker from ever wedging on it.
//
// Locks, in the order they may be taken. Today no path holds two of them
// at once: each is taken, used on memory only and released before the
// next, so nothing can wait on itself or in a cycle, and none is held
// across a call that may block (a scaler's Sample or Close, the API server,
// the RESTMapper, an HTTP response, the wake channel, the Prometheus
// vectors' own locks). A path that ever needs two takes them top to bottom:
//
//   - liveAutoscalers.mu (metrics.go): the set of running autoscalers; the
//     metrics collector copies it and releases it before reading any loop.
//   - kindLoop.mu: the map of workloads. Read by lookup, get, the scraper's
//     ScrapeWorkloads (which copies the map's entries and releases it before
//     taking any workload.mu) and the collector; written by get and forget.
//   - workload.mu: what the endpoints and the scraper read (state, message,
//     interval, records, scrape, podLabels). Taken by publish, explain, currentState,
//     ensureScalers and closeScalers (for scrape only), and ScrapeWorkloads.
//   - workers.InFlight.mu: the reconciles in flight, for the worker
//     gauges; workers.Shares.mu: each namespace's share of the workers.
//   - foreign.Finder.mu (internal/foreign): when KEDA was last looked for; released
//     before the RESTMapper is asked.
//   - Writer.mu and ActivityWriter.mu (package internal/scalings): what
//     waits to be written; released before every API call.
//
// Without a lock: workload.activity and workload.pending are atomic, so a
// gateway's activity signal never waits for a tick; Autoscaler.env is an
// atomic pointer; the wake channel is only sent to with select/default, so
// a full channel (or a replica whose controller does not run) never blocks
// a sender.
//
// The reconciler's own fields of a workload (History, scalers, lastTick,
// ...) are touched only by the reconcile of that workload, which the work
// queue never runs twice at once, and by forget, which runs inside that
// same reconcile. Other paths (the activity endpoint, a dependent's tick)
// touch only the atomic fields.
//
// Deletion. forget takes the workload out of the map first, so anything
// arriving afterwards (an activity POST, a dependent's signal, the same
// name created again) gets a new, empty memory, and then deletes the
// workload's metrics and closes its scalers outside every lock, within
// Options.CloseTimeout even when the reconcile's context has ended (a
// leader that lost its lease, a shutdown): a remote scaler gets its chance
// to release its connection, and one whose Close ignores its context is
// abandoned rather than holding the worker. Deleting twice finds nothing
// the second time. Memory created for a name by someone other than the
// reconciler (activity, a dependency signal) comes with a queued tick of
// that name, whose reconcile either keeps it or forgets it; only when the
// wake channel is full or nobody drains it (a replica that is not the
// leader) does it wait for the name's next event.

// DefaultCloseTimeout bounds closing one workload's scalers.
const DefaultCloseTimeout = 5 * time.Second

// lookup returns a workload's memory, nil when never seen.
func (k *kindLoop) lookup(ns, name string) *workload {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.workloads[types.NamespacedName{Namespace: ns, Name: name}]
}

// get returns a workload's memory, creating it.
func (k *kindLoop) get(nn types.NamespacedName) *workload {
	st, _ := k.getOrCreate(nn)
	return st
}

// getOrCreate returns a workload's memory and whether this call created it.
func (k *kindLoop) getOrCreate(nn types.NamespacedName) (*workload, bool) {
	k.mu.RLock()
	st := k.workloads[nn]
	k.mu.RUnlock()
	if st != nil {
		return st, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if st = k.workloads[nn]; st != nil {
		return st, false
	}
	st = newWorkload(nn, k.a.opts.HistoryLength)
	k.workloads[nn] = st
	return st, true
}

// remembered is how many workloads the loop keeps in memory.
func (k *kindLoop) remembered() int {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return len(k.workloads)
}

// forget drops a deleted workload's memory, removes its metrics and closes
// its scalers. It runs only in the reconcile of nn.
func (k *kindLoop) forget(ctx context.Context, nn types.NamespacedName) {
	k.mu.Lock()
	st := k.workloads[nn]
	delete(k.workloads, nn)
	k.mu.Unlock()
	if e := k.a.env.Load(); e != nil && e.scalings != nil {
		// Namespaced workloads' Scalings go with them (owner reference).
		e.scalings.Forget(ctx, k.scalingKey(nn), nn.Namespace == "" && e.scalings.Served())
	}
	if st == nil {
		return
	}
	k.deleteMetrics(st)
	k.closeScalers(ctx, st)
}

// closeScalers releases the workload's scalers: they are detached from it
// first (the next tick builds new ones), then closed outside every lock
// within Options.CloseTimeout.
func (k *kindLoop) closeScalers(ctx context.Context, st *workload) {
	old := st.scalers
	st.scalers, st.scalersFrom = nil, nil
	if req := k.a.opts.RequestQueries; req != nil && len(old) > 0 {
		// No queries removes the owner; it cannot fail.
		_ = req(k.queryOwner(st.nn))
	}
	st.mu.Lock()
	st.scrape = false
	st.mu.Unlock()
	if err := closeAll(ctx, old, k.a.opts.CloseTimeout); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "close the scalers of a workload", "workload", st.nn.String())
	}
}

// closeAll closes scalers one after the other within timeout, with a
// context that outlives ctx's cancellation (a shutdown still closes them)
// but not the timeout. A Close that ignores its context is left running
// and reported: the caller returns at the timeout either way.
func closeAll(ctx context.Context, scalers []builtScaler, timeout time.Duration) error {
	var open []builtScaler
	for _, b := range scalers {
		if b.scaler != nil {
			open = append(open, b)
		}
	}
	if len(open) == 0 {
		return nil
	}
	_, err := workers.Bounded(context.WithoutCancel(ctx), timeout, func(ctx context.Context) (struct{}, error) {
		var errs []error
		for _, b := range open {
			if err := b.scaler.Close(ctx); err != nil {
				errs = append(errs, fmt.Errorf("close the scaler of trigger %q (source %s): %w", b.name, b.source, err))
			}
		}
		return struct{}{}, errors.Join(errs...)
	})
	return err
}

// sampleBounded is one trigger's sample within Options.SampleTimeout, even
// from a scaler that ignores its context.
func (k *kindLoop) sampleBounded(ctx context.Context, s scaling.Scaler, now time.Time) (scaling.Sample, error) {
	return workers.Bounded(ctx, k.a.opts.SampleTimeout, func(ctx context.Context) (scaling.Sample, error) { return s.Sample(ctx, now) })
}
