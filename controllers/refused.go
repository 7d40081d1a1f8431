package controllers

import (
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// Bounds of the backoff after the API server refuses a write (C6). The
// first retry comes soon, for a webhook or CEL rule that was fixed; a
// refusal that persists is retried at most every five minutes.
const (
	refusedBackoffBase = time.Second
	refusedBackoffCap  = 5 * time.Minute
)

// refusals remembers writes the API server refused (C6), per workload, so
// the same write to the same generation is not sent again before its
// backoff has passed, however often the workload is reconciled (status
// updates by the workload's operator, resyncs). The zero value is ready.
type refusals struct {
	mu  sync.Mutex
	m   map[types.NamespacedName]refusal
	now func() time.Time
}

type refusal struct {
	// write names the refused write: the workload's generation and the
	// patch, so a new spec or another decision is tried at once.
	write string
	delay time.Duration
	until time.Time
}

func (r *refusals) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// held returns how long write must still wait, and whether it must.
func (r *refusals) held(nn types.NamespacedName, write string) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, ok := r.m[nn]
	if !ok || f.write != write {
		return 0, false
	}
	left := f.until.Sub(r.clock())
	return left, left > 0
}

// refused records that write was refused and returns the delay before it
// may be sent again: doubled for every consecutive refusal of the same
// write, up to refusedBackoffCap.
func (r *refusals) refused(nn types.NamespacedName, write string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[types.NamespacedName]refusal{}
	}
	d := refusedBackoffBase
	if f, ok := r.m[nn]; ok && f.write == write {
		d = min(2*f.delay, refusedBackoffCap)
	}
	r.m[nn] = refusal{write: write, delay: d, until: r.clock().Add(d)}
	return d
}

// forget drops what is remembered of nn: its write went through, or is no
// longer wanted.
func (r *refusals) forget(nn types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, nn)
}

// isRefusal reports whether err is the API server refusing the content of a
// write (schema, CEL, an admission webhook, RBAC): sending it again
// unchanged gets the same answer. Conflicts and transient errors are left
// to the usual retries.
func isRefusal(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) ||
		apierrors.IsRequestEntityTooLargeError(err)
}

// heldError is a write that was refused, or is waiting out its backoff:
// Reconcile goes on with the other policies and asks to come back after.
type heldError struct {
	after time.Duration
	// message is what to tell the user, once.
	message string
}

func (e *heldError) Error() string {
	return fmt.Sprintf("%s; retrying in %s", e.message, e.after.Round(time.Second))
}

func asHeld(err error) (*heldError, bool) {
	var h *heldError
	ok := errors.As(err, &h)
	return h, ok
}
