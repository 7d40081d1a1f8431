package scalings

import (
	"math"
	"time"

	"golang.org/x/time/rate"
)

// shares are the namespaces' buckets of one writer (the Scaling writer,
// the activity writer) under the bucket of its process: the namespace is
// the tenant, and its bucket its share of the process's writes.
//
// A namespace past its share borrows from the process's bucket what the
// others leave: the process's bucket keeps, after a borrow, the tokens the
// other namespaces with work have left in their own buckets (up to one
// namespace's burst), and never less than one write for a namespace that
// has no bucket yet. So a namespace alone, or beside namespaces that spend
// their shares, writes at the process's pace; beside namespaces that do
// not spend theirs, it borrows only what they leave, and their writes
// within their shares never wait on its borrowing. Another namespace
// holds a borrower back only by the tokens it has left, up to one burst:
// one that keeps a trickle of writes going spends a trickle and leaves
// the rest of the process's pace to be borrowed.
//
// The namespaces' shares add up to more than the process's pace (each is
// half of it), so namespaces within their shares can together take every
// token as it comes. A namespace whose own share had tokens while the
// process's bucket had none is waiting: until it writes (or a while
// passes, or its last item goes), the others' writes within their shares
// leave one write's tokens in the process's bucket for each waiting
// namespace, so that a third namespace beside two at their shares gets
// its writes at its next try instead of never.
//
// A namespace's bucket outlives its last item until it has refilled
// (idle), so that deleting and re-creating all of a namespace's workloads
// does not give it a fresh burst; a refilled idle bucket is dropped, so
// namespaces that are gone leave nothing behind.
//
// It is not safe for concurrent use: its writer's lock guards it.
type shares struct {
	// newLimiter builds a namespace's bucket; nil: no bucket per
	// namespace, the process's bucket alone.
	newLimiter func() *rate.Limiter
	// floor is the tokens of one write, left in the process's bucket for
	// a namespace with no bucket yet.
	floor float64
	// buckets are the buckets of the namespaces with items or idle.
	buckets map[string]*namespaceBucket
	// idle are the buckets of namespaces without items, kept until they
	// have refilled.
	idle map[string]*namespaceBucket

	// left caches the tokens left in the buckets of the namespaces with
	// items (counted up to twice a burst) at leftAt; any take, and a
	// bucket's coming or going, makes it stale, and so does leftFor.
	left    float64
	leftAt  time.Time
	leftSet bool

	// waiting are the namespaces whose share had tokens when the
	// process's bucket had none, and when that was; an entry older than
	// waitingFor no longer holds back the others.
	waiting map[string]time.Time
}

// waitingFor is how long a waiting namespace holds back the others'
// writes within their shares without trying again: a writer that retries
// a held write less often than this (the activity writer retries once
// per window) still finds its tokens kept.
const waitingFor = 5 * time.Second

// leftFor is how long left stays fresh when nothing is taken.
const leftFor = 10 * time.Millisecond

// namespaceBucket is one namespace's share of the process's writes, and
// how many items (workloads, open windows) the namespace has.
type namespaceBucket struct {
	limiter *rate.Limiter
	items   int
}

func newShares(newLimiter func() *rate.Limiter, floor float64) shares {
	return shares{newLimiter: newLimiter, floor: floor, buckets: map[string]*namespaceBucket{}, idle: map[string]*namespaceBucket{}, waiting: map[string]time.Time{}}
}

// add counts one more item of ns, giving ns its bucket with its first
// (its idle bucket when it has one).
func (s *shares) add(ns string) {
	if s.newLimiter == nil {
		return
	}
	b := s.buckets[ns]
	if b == nil {
		b = &namespaceBucket{limiter: s.newLimiter()}
		s.buckets[ns] = b
	}
	if b.items == 0 {
		delete(s.idle, ns)
		s.leftSet = false
	}
	b.items++
}

// remove counts one item of ns less. At its last the bucket is dropped
// when it has refilled at now; otherwise it stays idle, and remove says
// how long it takes to refill (sweep drops it then; false: it never
// refills, and stays).
func (s *shares) remove(ns string, now time.Time) (refillIn time.Duration, refills bool) {
	b := s.buckets[ns]
	if b == nil {
		return 0, false
	}
	if b.items--; b.items > 0 {
		return 0, false
	}
	delete(s.waiting, ns)
	s.leftSet = false
	if b.refilled(now) {
		delete(s.buckets, ns)
		return 0, false
	}
	s.idle[ns] = b
	return b.untilRefilled(now)
}

// sweep drops the idle buckets that have refilled at now, and says when
// the next of the others will have (zero: none will).
func (s *shares) sweep(now time.Time) (next time.Time) {
	for ns, b := range s.idle {
		if b.refilled(now) {
			delete(s.idle, ns)
			delete(s.buckets, ns)
			continue
		}
		if d, ok := b.untilRefilled(now); ok && (next.IsZero() || now.Add(d).Before(next)) {
			next = now.Add(d)
		}
	}
	return next
}

// take takes n tokens of ns's bucket and of the process's (global) at
// now, or none. Past its share ns borrows as the type's comment says.
// When it takes none, wait is how long until asking again may succeed,
// and held is true when ns's share held it back (the process's bucket
// has tokens for the others), false when the process's bucket did.
func (s *shares) take(ns string, n int, global *rate.Limiter, now time.Time) (ok bool, wait time.Duration, held bool) {
	b := s.buckets[ns]
	if b == nil {
		r := global.ReserveN(now, n)
		if d := r.DelayFrom(now); !r.OK() || d > 0 {
			r.CancelAt(now)
			return false, d, false
		}
		s.leftSet = false
		return true, 0, false
	}
	share := b.limiter.ReserveN(now, n)
	if d := share.DelayFrom(now); !share.OK() || d > 0 {
		share.CancelAt(now)
		if tokensAt(global, now)-float64(n) < s.keep(b, now) {
			return false, d, true
		}
		// The share is spent first: a namespace that borrows has
		// less than a write's tokens left in its bucket.
		if t := b.limiter.TokensAt(now); t >= 1 {
			b.limiter.ReserveN(now, int(t))
		}
		global.ReserveN(now, n)
		s.leftSet = false
		return true, 0, false
	}
	if reserve := s.reserved(ns, now); reserve > 0 && tokensAt(global, now)-float64(n) < reserve {
		// Within its share, but the process's bucket holds no more than
		// the writes kept for the waiting namespaces.
		share.CancelAt(now)
		return false, time.Duration(float64(n) / float64(global.Limit()) * float64(time.Second)), false
	}
	r := global.ReserveN(now, n)
	if d := r.DelayFrom(now); !r.OK() || d > 0 {
		r.CancelAt(now)
		share.CancelAt(now)
		if _, ok := s.waiting[ns]; !ok {
			s.waiting[ns] = now
		}
		return false, d, false
	}
	delete(s.waiting, ns)
	s.leftSet = false
	return true, 0, false
}

// reserved is what the process's bucket keeps at now for the namespaces
// waiting besides ns: one write each (floor). Entries past waitingFor
// are dropped.
func (s *shares) reserved(ns string, now time.Time) float64 {
	if len(s.waiting) == 0 {
		return 0
	}
	n := 0
	for o, since := range s.waiting {
		switch {
		case now.Sub(since) >= waitingFor:
			delete(s.waiting, o)
		case o != ns:
			n++
		}
	}
	return float64(n) * s.floor
}

// keep is what the process's bucket must hold after b's namespace
// borrows at now: the tokens the other namespaces with items have left
// in their buckets, at most one bucket's burst, at least floor.
func (s *shares) keep(b *namespaceBucket, now time.Time) float64 {
	burst := float64(b.limiter.Burst())
	if !s.leftSet || now.Before(s.leftAt) || now.Sub(s.leftAt) >= leftFor {
		s.left = 0
		for _, o := range s.buckets {
			if o.items > 0 {
				// Counted up to twice a burst: less than a burst
				// is b's own, the rest is more than keep needs.
				if s.left += max(0, tokensAt(o.limiter, now)); s.left >= 2*burst {
					break
				}
			}
		}
		s.leftAt, s.leftSet = now, true
	}
	own := 0.0
	if b.items > 0 {
		own = max(0, tokensAt(b.limiter, now))
	}
	return max(s.floor, min(burst, s.left-own))
}

// tokensAt is l's tokens at now; an unlimited bucket has any number.
func tokensAt(l *rate.Limiter, now time.Time) float64 {
	if l.Limit() == rate.Inf {
		return math.Inf(1)
	}
	return l.TokensAt(now)
}

// refilled reports whether b's bucket is full at now.
func (b *namespaceBucket) refilled(now time.Time) bool {
	return tokensAt(b.limiter, now) >= float64(b.limiter.Burst())
}

// untilRefilled is how long b's bucket takes to fill from now; false when
// it never does (no refill).
func (b *namespaceBucket) untilRefilled(now time.Time) (time.Duration, bool) {
	if b.refilled(now) {
		return 0, true
	}
	r := float64(b.limiter.Limit())
	if r <= 0 {
		return 0, false
	}
	missing := float64(b.limiter.Burst()) - b.limiter.TokensAt(now)
	return time.Duration(missing/r*float64(time.Second)) + time.Millisecond, true
}
