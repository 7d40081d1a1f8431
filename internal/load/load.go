// Package load keeps a function called at a steady interval while a test
// changes something under it (a key pair, a leader), counting what
// succeeded and what failed. It is in the root module so that tests of
// every module (certs, e2e) share it without requiring one another.
package load

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Load calls a function at a steady interval until stopped, counting
// successes and failures: the admission traffic that certificate rotation
// tests keep flowing while a key pair changes under them.
type Load struct {
	ok, failed atomic.Int64
	lastErr    atomic.Value
	cancel     context.CancelFunc
	wg         sync.WaitGroup
}

// Start calls do every interval until ctx ends or Stop. A call that
// fails because the load is stopping is not counted.
func Start(ctx context.Context, interval time.Duration, do func(context.Context) error) *Load {
	l := &Load{}
	ctx, l.cancel = context.WithCancel(ctx)
	l.wg.Go(func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if err := do(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				l.failed.Add(1)
				l.lastErr.Store(err)
				continue
			}
			l.ok.Add(1)
		}
	})
	return l
}

// OK and Failed count the calls so far.
func (l *Load) OK() int64     { return l.ok.Load() }
func (l *Load) Failed() int64 { return l.failed.Load() }

// LastErr is the most recent failure, or nil.
func (l *Load) LastErr() error {
	err, _ := l.lastErr.Load().(error)
	return err
}

// Stop ends the load and waits for the call in flight.
func (l *Load) Stop() {
	l.cancel()
	l.wg.Wait()
}
