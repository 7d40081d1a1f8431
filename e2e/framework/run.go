package framework

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// Run starts one control plane for a test package, runs its tests, stops
// the control plane and returns the exit code for os.Exit. Use it from
// TestMain:
//
//	var cluster *framework.Cluster
//
//	func TestMain(m *testing.M) { os.Exit(framework.Run(m, framework.Options{}, &cluster)) }
func Run(m *testing.M, opts Options, into **Cluster) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: control plane started in %s\n", time.Since(start).Round(time.Millisecond))
	*into = c
	code := m.Run()
	for i := len(beforeStop) - 1; i >= 0; i-- {
		beforeStop[i]()
	}
	beforeStop = nil
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

var beforeStop []func()

// BeforeStop registers f to run after the package's tests and before its
// control plane stops, last registered first. A manager shared by a whole
// package stops here: one still watching when kube-apiserver shuts down
// holds it up past its stop timeout.
func BeforeStop(f func()) { beforeStop = append(beforeStop, f) }

// Runnable is what RunApp runs: scaleplane's app (cmd/scaleplane/app), or
// anything else that runs until its context ends.
type Runnable interface {
	Run(ctx context.Context) error
}

// RunApp runs r in the test process until the test ends, then stops it
// and reports an error it stopped with. The returned stop does the same
// earlier (once; the test's cleanup calls it too).
func RunApp(t testing.TB, r Runnable) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("app stopped with: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
