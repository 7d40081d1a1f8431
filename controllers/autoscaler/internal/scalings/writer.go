package scalings

import (
	"container/heap"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
)

// The writer of Scaling objects. The leader's ticks offer every workload's
// status as they build it; the writer applies it (server-side apply, field
// manager scaleplane) only when it changed, and within three token buckets:
// one per workload, one per namespace and one for the process, so that
// 10,000 workloads cannot flood the API server whatever their triggers do,
// and one namespace's workloads cannot take the whole budget from the
// others (the namespace is the tenant, as in the worker shares of the
// loop). A change an operator or a new leader acts on (mode, counts,
// conditions, decisions, history other than the newest recommendation's
// time) is written as soon as the buckets allow; a change of soft values
// only (trigger values, the newest recommendation's time, LastActive)
// waits for the refresh interval. Offers that arrive while a write waits
// replace it: only the newest status is written.

// GVK is the Scaling kind.
var GVK = v1alpha1.GroupVersion.WithKind("Scaling")

// Writes bounds the Scaling writes. Zero values take the defaults.
type Writes struct {
	// PerWorkloadInterval and PerWorkloadBurst are one workload's bucket:
	// one write per interval, bursts of up to burst. Default 1 s and 5.
	PerWorkloadInterval time.Duration
	PerWorkloadBurst    int
	// QPS and Burst are the process's bucket over every workload. Default
	// 50 and 200.
	QPS   float64
	Burst int
	// PerNamespaceQPS and PerNamespaceBurst are one namespace's bucket,
	// under the process's: a namespace with many workloads takes this
	// share, and past it borrows only what the other namespaces leave of
	// the process's budget (shares.go). Default half of QPS and of Burst
	// (a burst of at least 2: a new Scaling takes two calls); negative:
	// no bucket per namespace.
	PerNamespaceQPS   float64
	PerNamespaceBurst int
	// RefreshInterval is how often a status whose soft values alone
	// changed is written. Default 60 s.
	RefreshInterval time.Duration
}

func (o *Writes) defaults() {
	if o.PerWorkloadInterval <= 0 {
		o.PerWorkloadInterval = time.Second
	}
	if o.PerWorkloadBurst <= 0 {
		o.PerWorkloadBurst = 5
	}
	if o.QPS <= 0 {
		o.QPS = 50
	}
	if o.Burst <= 0 {
		o.Burst = 200
	}
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = 60 * time.Second
	}
	if o.PerNamespaceQPS == 0 {
		o.PerNamespaceQPS = o.QPS / 2
	}
	if o.PerNamespaceBurst == 0 {
		o.PerNamespaceBurst = o.Burst / 2
	}
	if o.PerNamespaceBurst > 0 {
		o.PerNamespaceBurst = max(2, o.PerNamespaceBurst)
	}
}

// namespaceLimiter builds one namespace's bucket; nil when namespaces
// have none.
func (o *Writes) namespaceLimiter() func() *rate.Limiter {
	if o.PerNamespaceQPS <= 0 || o.PerNamespaceBurst <= 0 {
		return nil
	}
	return func() *rate.Limiter { return rate.NewLimiter(rate.Limit(o.PerNamespaceQPS), o.PerNamespaceBurst) }
}

// Writer applies Scalings; see the top of this file. Build it with
// NewWriter.
type Writer struct {
	c      client.Client
	opts   Writes
	global *rate.Limiter
	now    func() time.Time
	kick   chan struct{}

	mu     sync.Mutex
	items  map[types.NamespacedName]*item
	urgent dueHeap
	soft   dueHeap
	// shares are the namespaces' buckets (shares.go): a namespace past
	// its share borrows what the others leave of the process's budget,
	// so that a share costs nothing when no one else uses theirs (a
	// single-tenant cluster, a rollout in one namespace of an otherwise
	// quiet cluster).
	shares shares

	// served is set once Scalings are served (Watch); until then
	// offers are kept and nothing is written.
	served atomic.Bool
	// known is set once Watch knows whether they are served: until
	// then no reconcile decides, so that a new leader's first decision
	// never runs before it could restore the History.
	known atomic.Bool

	// writes counts API calls made (applies and deletes), for the
	// benchmark and the metric.
	writes atomic.Int64
}

type item struct {
	key types.NamespacedName
	// object is the Scaling without status (metadata and spec), applied
	// once; status is the newest status offered.
	object *unstructured.Unstructured
	status v1alpha1.ScalingStatus
	sig    string
	full   string

	wroteSig, wroteFull string
	wroteAt             time.Time
	exists              bool
	failures            int
	// deletions counts the deletes of the Scaling seen (gone): a write
	// taken before one does not make the item exist again.
	deletions int
	// rewritten is set when Gone scheduled the status last offered to be
	// written again, until the next offer (Settled).
	rewritten bool

	limiter *rate.Limiter
	// due is when the item is next written; zero when not scheduled.
	due    time.Time
	urgent bool
}

// NewWriter builds the writer of Scalings through c, bounded by opts; now
// is the clock of Start (time.Now when nil).
func NewWriter(c client.Client, opts Writes, now func() time.Time) *Writer {
	opts.defaults()
	if now == nil {
		now = time.Now
	}
	return &Writer{
		c:      c,
		opts:   opts,
		global: rate.NewLimiter(rate.Limit(opts.QPS), opts.Burst),
		now:    now,
		kick:   make(chan struct{}, 1),
		items:  map[types.NamespacedName]*item{},
		shares: newShares(opts.namespaceLimiter(), 2),
	}
}

// Served reports whether Scalings are served; until MarkServed, offers are
// kept and nothing is written.
func (w *Writer) Served() bool { return w.served.Load() }

// MarkServed notes that Scalings are served (the Scaling watch saw them);
// it also marks them Known.
func (w *Writer) MarkServed() {
	w.served.Store(true)
	w.known.Store(true)
}

// Known reports whether it is known whether Scalings are served: until
// then no reconcile decides, so that a new leader's first decision never
// runs before it could restore the History.
func (w *Writer) Known() bool { return w.known.Load() }

// MarkKnown notes that whether Scalings are served is known.
func (w *Writer) MarkKnown() { w.known.Store(true) }

// Client is the client the writer writes with.
func (w *Writer) Client() client.Client { return w.c }

// Offer hands the writer the newest Scaling of a workload: object holds
// metadata (name, namespace, owner, labels) and spec.
func (w *Writer) Offer(object *unstructured.Unstructured, status v1alpha1.ScalingStatus, now time.Time) {
	key := types.NamespacedName{Namespace: object.GetNamespace(), Name: object.GetName()}
	sig, full := Fingerprints(status)
	w.mu.Lock()
	defer w.mu.Unlock()
	it := w.items[key]
	if it == nil {
		it = &item{key: key, limiter: rate.NewLimiter(rate.Every(w.opts.PerWorkloadInterval), w.opts.PerWorkloadBurst)}
		w.items[key] = it
		w.shares.add(key.Namespace)
	}
	it.object, it.status, it.sig, it.full = object, status, sig, full
	it.rewritten = false
	if it.exists && full == it.wroteFull {
		return
	}
	urgent := !it.exists || sig != it.wroteSig
	at := now
	if !urgent {
		at = it.wroteAt.Add(w.opts.RefreshInterval)
	}
	w.schedule(it, at, urgent)
}

// Settled reports whether an offer for key made before until could not
// be written before until: no urgent write is pending, and the next write
// of a status whose soft values alone changed (a refresh, or one already
// scheduled) comes after until. A caller that knows its status's
// significant part did not change since its last offer may then skip the
// offer (and building the status) without changing what is written,
// provided it offers again before until: the write then carries that
// newer offer, as it would have without the skip.
func (w *Writer) Settled(key types.NamespacedName, until time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	it := w.items[key]
	if it == nil || !it.exists || it.rewritten {
		return false
	}
	if it.due.IsZero() {
		// Nothing scheduled: the status offered last is written (or
		// being written, which schedules the newest offer after it).
		return it.full == it.wroteFull && until.Before(it.wroteAt.Add(w.opts.RefreshInterval))
	}
	return !it.urgent && until.Before(it.due)
}

// schedule sets it to be written at (or earlier, if it already is).
// Called with mu held.
func (w *Writer) schedule(it *item, at time.Time, urgent bool) {
	if !it.due.IsZero() && !at.Before(it.due) && (it.urgent || !urgent) {
		return
	}
	it.due, it.urgent = at, urgent
	h := &w.soft
	if urgent {
		h = &w.urgent
	}
	heap.Push(h, dueEntry{at: at, key: it.key})
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Forget drops a deleted workload's Scaling from memory; a cluster-scoped
// workload's Scaling (no owner reference to collect it) is deleted.
func (w *Writer) Forget(ctx context.Context, key types.NamespacedName, deleteObject bool) {
	w.mu.Lock()
	if _, ok := w.items[key]; ok {
		delete(w.items, key)
		// The bucket outlives the namespace's last item until it
		// has refilled: Flush sweeps it then.
		w.shares.remove(key.Namespace, w.now())
	}
	w.mu.Unlock()
	if !deleteObject {
		return
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(GVK)
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	w.writes.Add(1)
	if err := w.c.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
		ctrl.LoggerFrom(ctx).Error(err, "delete the Scaling of a deleted workload", "scaling", key.String())
	}
}

// Gone notes that the Scaling at key was deleted: one the writer keeps is
// written again at once, object and status.
func (w *Writer) Gone(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	it := w.items[key]
	if it == nil {
		return
	}
	it.exists, it.wroteSig, it.wroteFull = false, "", ""
	it.rewritten = true
	it.deletions++
	w.schedule(it, w.now(), true)
}

// next pops the next item to write at now, or says when to look again
// (zero: nothing scheduled). Urgent items go first; the item's bucket,
// its namespace's and the process's must all allow the write, or the
// namespace borrow past its share what the others leave (shares.go). An
// item its namespace's share holds back is scheduled for when that
// bucket allows it, so the items of other namespaces behind it go first.
func (w *Writer) next(now time.Time) (*item, write, time.Time) {
	if !w.served.Load() {
		return nil, write{}, time.Time{}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		h := &w.urgent
		if !w.urgent.ready(now) {
			h = &w.soft
		}
		if h.Len() == 0 {
			return nil, write{}, w.earliest()
		}
		e := (*h)[0]
		it := w.items[e.key]
		if it == nil || !it.due.Equal(e.at) || (h == &w.urgent) != it.urgent {
			heap.Pop(h) // stale: rescheduled or forgotten
			continue
		}
		if e.at.After(now) {
			return nil, write{}, w.earliest()
		}
		own := it.limiter.ReserveN(now, 1)
		if d := own.DelayFrom(now); d > 0 {
			own.CancelAt(now)
			heap.Pop(h)
			it.due = time.Time{}
			w.schedule(it, now.Add(d), it.urgent)
			continue
		}
		calls := 1
		if !it.exists {
			calls = 2 // the object, then its status
		}
		if ok, d, held := w.shares.take(it.key.Namespace, calls, w.global, now); !ok {
			own.CancelAt(now)
			if !held {
				// The process's budget is spent: nothing is written
				// before it refills.
				return nil, write{}, now.Add(d)
			}
			// Past its namespace's share, with nothing left to
			// borrow: the other namespaces' items go first.
			heap.Pop(h)
			it.due = time.Time{}
			w.schedule(it, now.Add(d), it.urgent)
			continue
		}
		heap.Pop(h)
		it.due = time.Time{}
		if it.exists && it.full == it.wroteFull {
			continue // an offer put it back as written
		}
		return it, write{object: it.object, status: it.status, sig: it.sig, full: it.full, create: !it.exists, deletions: it.deletions}, time.Time{}
	}
}

// earliest is the first due time of either heap, zero when none. Called
// with mu held; stale entries only make it early, which costs a wake-up.
func (w *Writer) earliest() time.Time {
	var at time.Time
	for _, h := range []*dueHeap{&w.urgent, &w.soft} {
		if h.Len() > 0 && (at.IsZero() || (*h)[0].at.Before(at)) {
			at = (*h)[0].at
		}
	}
	return at
}

// scalingWrite is one write taken from an item under the lock.
type write struct {
	object    *unstructured.Unstructured
	status    v1alpha1.ScalingStatus
	sig, full string
	create    bool
	deletions int
}

// Flush writes every item due at now that the buckets allow, and returns
// when to call it again (zero: when something is offered): the next
// write, or the time an idle namespace's bucket can be dropped.
func (w *Writer) Flush(ctx context.Context, now time.Time) time.Time {
	w.mu.Lock()
	sweep := w.shares.sweep(now)
	w.mu.Unlock()
	for {
		it, wr, at := w.next(now)
		if it == nil {
			if at.IsZero() || !sweep.IsZero() && sweep.Before(at) {
				return sweep
			}
			return at
		}
		err := w.apply(ctx, wr)
		w.mu.Lock()
		switch {
		case err == nil && it.deletions != wr.deletions:
			// Deleted while the write ran: gone scheduled it again.
		case err == nil:
			it.exists, it.failures = true, 0
			it.wroteSig, it.wroteFull, it.wroteAt = wr.sig, wr.full, now
			if it.full != it.wroteFull && w.items[it.key] == it {
				// Offered again while the write ran.
				at := now
				if it.sig == it.wroteSig {
					at = now.Add(w.opts.RefreshInterval)
				}
				w.schedule(it, at, it.sig != it.wroteSig)
			}
		case ctx.Err() != nil:
		default:
			// C6: a refused write is retried with backoff, never in a loop.
			if apierrors.IsNotFound(err) {
				it.exists = false
			}
			it.failures++
			if w.items[it.key] == it {
				w.schedule(it, now.Add(backoff(it.failures)), false)
			}
			ctrl.LoggerFrom(ctx).Info("Scaling write failed; retrying with backoff", "scaling", it.key.String(), "failures", it.failures, "error", err.Error())
		}
		w.mu.Unlock()
		if ctx.Err() != nil {
			return time.Time{}
		}
	}
}

func backoff(failures int) time.Duration {
	d := time.Second << min(failures-1, 8)
	return min(d, 5*time.Minute)
}

// apply writes one Scaling: the object itself when it may not exist yet,
// then its status, both server-side applied under scaleplane's field
// manager. status.lastActivity is never part of the leader's apply, so the
// activity patches of every replica keep owning it.
func (w *Writer) apply(ctx context.Context, wr write) error {
	if wr.create {
		w.writes.Add(1)
		if err := w.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(wr.object.DeepCopy()), client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply Scaling %s/%s: %w", wr.object.GetNamespace(), wr.object.GetName(), err)
		}
	}
	st := wr.status.DeepCopy()
	st.LastActivity = nil
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(st)
	if err != nil {
		return fmt.Errorf("convert Scaling status: %w", err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": raw}}
	u.SetGroupVersionKind(GVK)
	u.SetNamespace(wr.object.GetNamespace())
	u.SetName(wr.object.GetName())
	w.writes.Add(1)
	if err := w.c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply the status of Scaling %s/%s: %w", wr.object.GetNamespace(), wr.object.GetName(), err)
	}
	return nil
}

// Start runs the writer until ctx ends; on the leader only. Tests call
// Flush with a clock of their own instead.
func (w *Writer) Start(ctx context.Context) error {
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithName("scalings"))
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		at := w.Flush(ctx, w.now())
		wait := time.Hour
		if !at.IsZero() {
			wait = max(at.Sub(w.now()), time.Millisecond)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-w.kick:
		case <-timer.C:
		}
	}
}

// NeedLeaderElection is true: only the leader decides, so only it writes.
func (w *Writer) NeedLeaderElection() bool { return true }

// Object is the Scaling of workload u (metadata and spec): in u's
// namespace with u as its owner, or, for a cluster-scoped u, in ns
// without an owner (an owner reference from a namespaced object to a
// cluster-scoped one is allowed, but the Scaling must live in some
// namespace, and one in scaleplane's own is found by the operator who
// runs it); the autoscaler deletes those itself.
func Object(u *unstructured.Unstructured, ns string) *unstructured.Unstructured {
	gk := u.GroupVersionKind().GroupKind()
	kind := gk.Kind
	s := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"targetRef": map[string]any{
			"apiVersion": u.GetAPIVersion(), "kind": kind, "name": u.GetName(),
		}},
	}}
	s.SetGroupVersionKind(GVK)
	s.SetName(Name(u.GetName(), gk))
	// Label values hold 63 characters: longer names and groups are cut and
	// hashed (labelValue); spec.targetRef names the workload in full.
	s.SetLabels(map[string]string{
		v1alpha1.LabelManagedBy:     v1alpha1.ManagedByValue,
		v1alpha1.LabelWorkloadKind:  kind,
		v1alpha1.LabelWorkloadGroup: LabelValue(gk.Group),
		v1alpha1.LabelWorkloadName:  LabelValue(u.GetName()),
	})
	if u.GetNamespace() == "" {
		s.SetNamespace(ns)
		return s
	}
	s.SetNamespace(u.GetNamespace())
	s.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: u.GetAPIVersion(), Kind: kind, Name: u.GetName(), UID: u.GetUID(),
		BlockOwnerDeletion: ptr(false), Controller: ptr(false),
	}})
	return s
}

// dueEntry is one scheduled write; dueHeap orders them by time.
type dueEntry struct {
	at  time.Time
	key types.NamespacedName
}

type dueHeap []dueEntry

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueEntry)) }
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// ready reports whether the earliest entry is due at now.
func (h dueHeap) ready(now time.Time) bool { return len(h) > 0 && !h[0].at.After(now) }
