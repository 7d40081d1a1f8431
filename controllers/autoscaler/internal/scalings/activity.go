package scalings

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
)

// ActivityWriter records POST /activity/... in the workload's Scaling, on
// whichever replica receives it, so that the leader learns of it through
// its watch of Scalings and a new leader finds it. Writes are a status
// patch of lastActivity alone, coalesced to at most one per workload per
// window: the first signal is written at once, later ones within the
// window are kept and the newest is written when the window ends. A patch
// never moves lastActivity back: it reads the Scaling first and carries
// its resourceVersion, so two replicas racing cannot overwrite a newer
// time with an older one. Entries live only while a window is open, so
// a replica that is not the leader keeps no memory of workloads. A token
// bucket over every workload (ActivityWriteQPS) bounds the replica's
// writes, and one per namespace under it (half of it) the writes of one
// namespace's workloads: past either a signal waits in its window, which
// stays open until a token frees, so a flood of activity for many
// workloads lengthens the windows instead of flooding the API server, and
// a flood in one namespace lengthens that namespace's windows, not the
// others'. A namespace past its share borrows what the others leave of
// the replica's bucket (shares.go): alone it writes at the replica's pace.
type ActivityWriter struct {
	c      client.Client
	api    client.Reader
	ns     string
	window time.Duration
	// After runs f after d (time.AfterFunc); tests replace it before the
	// first Record.
	After func(d time.Duration, f func())
	// Limiter bounds the writes of this replica (ActivityWriteQPS and
	// ActivityWriteBurst); tests replace it.
	Limiter *rate.Limiter
	// NamespaceLimiter builds the bucket of one namespace under Limiter
	// (half of it by default); tests replace it before the first Record.
	// Nil: no bucket per namespace.
	NamespaceLimiter func() *rate.Limiter
	// Now is the clock a stored time in the future is judged by.
	Now func() time.Time

	mu   sync.Mutex
	open map[types.NamespacedName]*activityEntry
	// shares are the buckets of the namespaces with a window open, and
	// how many each has: a bucket goes once its namespace's last one has
	// closed and it has refilled. Built at the first Record, from
	// NamespaceLimiter.
	shares *shares

	writes atomic.Int64
}

type activityEntry struct {
	pending  time.Time
	workload *unstructured.Unstructured
}

// NewActivityWriter builds the activity writer of one replica: it writes
// through c, reads the Scalings past the cache with api, and puts the
// Scalings of cluster-scoped workloads in ns.
func NewActivityWriter(c client.Client, api client.Reader, ns string) *ActivityWriter {
	return &ActivityWriter{
		c: c, api: api, ns: ns, window: time.Second,
		After:   func(d time.Duration, f func()) { time.AfterFunc(d, f) },
		Limiter: rate.NewLimiter(ActivityWriteQPS, ActivityWriteBurst),
		NamespaceLimiter: func() *rate.Limiter {
			return rate.NewLimiter(ActivityWriteQPS/2, ActivityWriteBurst/2)
		},
		Now:  time.Now,
		open: map[types.NamespacedName]*activityEntry{},
	}
}

// allow takes a token of ns's bucket and of the replica's, or, past its
// share, borrows one of the replica's (shares.take). Called with mu held.
func (w *ActivityWriter) allow(ns string) bool {
	ok, _, _ := w.buckets().take(ns, 1, w.Limiter, w.Now())
	return ok
}

// buckets are the namespaces' buckets, built at the first use from
// NamespaceLimiter. Called with mu held.
func (w *ActivityWriter) buckets() *shares {
	if w.shares == nil {
		s := newShares(w.NamespaceLimiter, 1)
		w.shares = &s
	}
	return w.shares
}

// opened counts a window of ns, giving ns its bucket with its first.
// Called with mu held.
func (w *ActivityWriter) opened(ns string) { w.buckets().add(ns) }

// closed counts a window of ns less, dropping its bucket with its last
// once the bucket has refilled: a namespace that lets all its windows
// close and posts again gets no fresh burst past its share. Called with
// mu held.
func (w *ActivityWriter) closed(ns string) {
	if d, ok := w.buckets().remove(ns, w.Now()); ok && d > 0 {
		w.After(d, func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.shares.sweep(w.Now())
		})
	}
}

// ActivityWriteQPS and ActivityWriteBurst bound one replica's writes of
// activity to Scalings.
const (
	ActivityWriteQPS   = 50
	ActivityWriteBurst = 100
)

// MaxActivitySkew is how far in the future an activity time may lie (the
// clocks of two replicas differ a little): a later one, from a Scaling's
// status or any other source, is refused, so that a time in year 2250
// neither keeps a workload awake for good nor blocks every later write,
// and one past year 2262 does not overflow.
const MaxActivitySkew = 30 * time.Second

// ActivityTime is t as an activity time at now: refused (false) when it
// lies more than MaxActivitySkew after now or before 1970 (zero
// included), and now when it lies after now within the allowance.
func ActivityTime(t, now time.Time) (time.Time, bool) {
	switch {
	case t.IsZero() || t.Before(time.Unix(0, 0)):
		return time.Time{}, false
	case t.After(now.Add(MaxActivitySkew)):
		return time.Time{}, false
	case t.After(now):
		return now, true
	}
	return t, true
}

// Record writes activity at t for workload u, whose Scaling is at key, or,
// within the window of the last write, keeps it for the window's end. It
// returns the write's error (nil when coalesced).
func (w *ActivityWriter) Record(ctx context.Context, key types.NamespacedName, u *unstructured.Unstructured, t time.Time) error {
	w.mu.Lock()
	if e := w.open[key]; e != nil {
		if t.After(e.pending) {
			e.pending, e.workload = t, u
		}
		w.mu.Unlock()
		return nil
	}
	e := &activityEntry{workload: u}
	w.open[key] = e
	w.opened(key.Namespace)
	if !w.allow(key.Namespace) {
		// Over the replica's budget or its namespace's share: written
		// when the window ends.
		e.pending = t
		w.mu.Unlock()
		w.After(w.window, func() { w.windowEnd(key) })
		return nil
	}
	w.mu.Unlock()
	err := w.write(ctx, u, key, t)
	w.After(w.window, func() { w.windowEnd(key) })
	return err
}

// windowEnd writes what arrived during the window, opening a new one, or
// closes the entry when nothing did.
func (w *ActivityWriter) windowEnd(key types.NamespacedName) {
	w.mu.Lock()
	e := w.open[key]
	if e == nil || e.pending.IsZero() {
		if e != nil {
			delete(w.open, key)
			w.closed(key.Namespace)
		}
		w.mu.Unlock()
		return
	}
	if !w.allow(key.Namespace) {
		w.mu.Unlock()
		w.After(w.window, func() { w.windowEnd(key) })
		return
	}
	t, u := e.pending, e.workload
	e.pending = time.Time{}
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.write(ctx, u, key, t); err != nil {
		ctrl.Log.WithName("activity").Info("record activity in the Scaling", "scaling", key.String(), "error", err.Error())
	}
	w.After(w.window, func() { w.windowEnd(key) })
}

// OpenEntries is how many workloads have a window open.
func (w *ActivityWriter) OpenEntries() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.open)
}

// write sets the Scaling's status.lastActivity to t unless it already
// holds t or later, creating the Scaling (as the leader would) when there
// is none yet.
func (w *ActivityWriter) write(ctx context.Context, u *unstructured.Unstructured, key types.NamespacedName, t time.Time) error {
	want := metav1.NewMicroTime(t)
	wantStr, _ := want.MarshalQueryParameter()
	for attempt := 0; attempt < 4; attempt++ {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(GVK)
		err := w.api.Get(ctx, key, cur)
		if apierrors.IsNotFound(err) {
			w.writes.Add(1)
			obj := Object(u, w.ns)
			if err := w.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership); err != nil {
				return fmt.Errorf("create Scaling %s: %w", key, err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("read Scaling %s: %w", key, err)
		}
		if s, ok, _ := unstructured.NestedString(cur.Object, "status", "lastActivity"); ok {
			var have metav1.MicroTime
			// A stored time in the future (ActivityTime) is overwritten.
			if have.UnmarshalQueryParameter(s) == nil && !have.Time.Before(want.Truncate(time.Microsecond)) &&
				!have.After(w.Now().Add(MaxActivitySkew)) {
				return nil
			}
		}
		base := cur.DeepCopy()
		if err := unstructured.SetNestedField(cur.Object, wantStr, "status", "lastActivity"); err != nil {
			return err
		}
		w.writes.Add(1)
		err = w.c.Status().Patch(ctx, cur, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(v1alpha1.ActivityFieldManager))
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("patch the lastActivity of Scaling %s: %w", key, err)
		}
		return nil
	}
	return fmt.Errorf("patch the lastActivity of Scaling %s: it kept changing; retry", key)
}
