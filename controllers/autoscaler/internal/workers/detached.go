package workers

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Bounded runs f with a context that ends after timeout, and returns when
// f does or when the context ends, whichever is first: a scaler that
// ignores its context cannot hold the caller past the timeout. f keeps
// running in its goroutine until it returns by itself; its result is then
// dropped.
func Bounded[T any](parent context.Context, timeout time.Duration, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	RunDetached(func() {
		v, err := f(ctx)
		done <- result{v, err}
	})
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		select {
		case r := <-done: // it returned as the context ended
			return r.v, r.err
		default:
		}
		var zero T
		// Only this call's own deadline is "no answer within timeout"; a
		// parent that ended (the tick's budget, shutdown) says so itself.
		if parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return zero, fmt.Errorf("no answer within %s: %w", timeout, ctx.Err())
		}
		return zero, fmt.Errorf("stopped waiting: %w", ctx.Err())
	}
}

// idleWorkers hands work to the goroutines RunDetached keeps between
// calls. It is unbuffered: a send succeeds only when a worker is waiting.
var idleWorkers = make(chan func())

// workerIdle is how long a RunDetached goroutine waits for more work
// before it ends.
const workerIdle = 10 * time.Second

// RunDetached runs f on a goroutine of its own, as `go f()` does, but on
// one left waiting by an earlier call when there is one. An evaluation in
// the store's query engine grows a goroutine's stack to tens of
// kilobytes: a new goroutine per sample paid for that growth on every
// trigger of every tick, which was most of the tick's cost beside the
// query itself. A worker whose f never returns is simply not reused.
func RunDetached(f func()) {
	select {
	case idleWorkers <- f:
	default:
		detachedStarted.Add(1)
		go detachedWorker(f)
	}
}

// detachedStarted counts the goroutines RunDetached started.
var detachedStarted atomic.Int64

func detachedWorker(f func()) {
	f()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		select {
		case f = <-idleWorkers:
			f()
			idle.Reset(workerIdle)
		case <-idle.C:
			return
		}
	}
}

// DetachedStarted is how many goroutines RunDetached started.
func DetachedStarted() int64 { return detachedStarted.Load() }
