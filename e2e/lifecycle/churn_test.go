package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// churnWorkloads is how many workloads the churn creates, scales and
// deletes; SCALEPLANE_CHURN_WORKLOADS changes it for a bigger run.
func churnWorkloads(t *testing.T) int {
	t.Helper()
	n := 300
	if v := os.Getenv("SCALEPLANE_CHURN_WORKLOADS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("SCALEPLANE_CHURN_WORKLOADS=%q: want a whole number >= 1", v)
		}
	}
	return n
}

// churnConcurrency is how many workloads go through their lifecycle at
// once: enough that deletions land while other workloads' ticks and
// writes run, few enough for a loaded 2-core machine.
const churnConcurrency = 16

// goroutineTolerance is how far above its baseline the goroutine count may
// stay once the churn is over. The baseline is taken after a first
// workload's whole lifecycle, so every pool (API server connections, the
// scraper's connection to the exporter, the event broadcaster) already
// exists, but with one workload at a time. The churn runs churnConcurrency
// at once, and each may leave one more keep-alive connection open in a
// client's idle pool until it times out (3 goroutines each: the client's
// read and write loops and the server's connection); on a loaded machine a
// few of those outlive the wait. Beyond that, 20 covers six transient
// connections and events still being posted. A leak of even one goroutine
// per workload (300 by default) would exceed it four times over.
const goroutineTolerance = 20 + 3*churnConcurrency

// TestChurn creates, scales and deletes several hundred
// autoscaled workloads while the trigger autoscaler ticks every second,
// with deletions landing before, during and after ticks, then checks that
// the lifecycle left nothing behind: no busy worker, no in-flight tick,
// goroutines back to their baseline, no workload in the autoscaler's
// memory or in its metrics, and a new workload still scales on its
// trigger.
func TestChurn(t *testing.T) {
	began := time.Now()
	n := churnWorkloads(t)
	ns := cluster.Namespace(t)
	port := exporter(t)
	m := startApp(t)

	// Warm-up: one workload's whole lifecycle, so that the baseline has
	// every pool a workload's lifecycle opens.
	warm := workload{ns: ns, name: "warm-up", port: port}
	ctx := context.Background()
	if err := warm.create(ctx); err != nil {
		t.Fatal(err)
	}
	if err := warm.awaitReplicas(ctx, autoscaledTo, framework.DefaultTimeout); err != nil {
		t.Fatal(err)
	}
	if err := warm.delete(ctx); err != nil {
		t.Fatal(err)
	}
	m.awaitRest(t, ns)
	baseline := runtime.NumGoroutine()

	start := time.Now()
	var (
		afterTick atomic.Int64
		failures  = make(chan error, n)
		next      atomic.Int64
		wg        sync.WaitGroup
	)
	for range churnConcurrency {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				ticked, err := churnOne(ctx, workload{ns: ns, name: fmt.Sprintf("w%04d", i), port: port}, i)
				if err != nil {
					failures <- err
					continue
				}
				if ticked {
					afterTick.Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(failures)
	var errs []error
	for err := range failures {
		errs = append(errs, err)
	}
	churned := time.Since(start)
	if len(errs) > 0 {
		// A wedged autoscaler shows here first: the workloads that wait
		// for a tick never get one. The gauges say why.
		state, _ := m.workers(ctx, ns)
		t.Fatalf("%d of %d workloads failed their lifecycle; autoscaler: %s; first errors:\n%v",
			len(errs), n, state, errors.Join(first(errs, 5)...))
	}

	stuck := m.awaitRest(t, ns)
	var after int
	var stacks string
	var dumped time.Time
	framework.Eventually(t, framework.DefaultTimeout, func(context.Context) (bool, string) {
		after = runtime.NumGoroutine()
		if after <= baseline+goroutineTolerance {
			return true, ""
		}
		// The stacks are for the failure message; read them now and then,
		// not on every poll.
		if time.Since(dumped) > 2*time.Second {
			stacks, dumped = goroutineSummary(), time.Now()
		}
		return false, fmt.Sprintf("%d goroutines, baseline %d + tolerance %d; goroutines by stack:\n%s", after, baseline, goroutineTolerance, stacks)
	})

	// The autoscaler still works: a new workload scales on its trigger.
	fresh := workload{ns: ns, name: "after-churn", port: port}
	if err := fresh.create(ctx); err != nil {
		t.Fatal(err)
	}
	if err := fresh.awaitReplicas(ctx, autoscaledTo, framework.DefaultTimeout); err != nil {
		t.Fatal(err)
	}
	t.Logf("churn: %d workloads (%d deleted after a tick of theirs wrote /scale) created, scaled and deleted in %s with %d at a time; "+
		"goroutines %d before, %d after (tolerance %d); stuck workers %d; a new workload scaled to %d after it; %s in all",
		n, afterTick.Load(), churned.Round(time.Millisecond), churnConcurrency, baseline, after, goroutineTolerance, stuck, autoscaledTo,
		time.Since(began).Round(time.Millisecond))
}

// churnOne is one workload's lifecycle. Every workload is created and
// deleted; on the way, by its index: half are scaled by a user (every
// tenth of those with kubectl, the others through /scale, as an HPA does);
// every fifth waits for its first tick to write the trigger's count before
// it is deleted, so that deletions land after ticks for sure; the others
// are deleted at once, before, during or after their first tick. It
// reports whether it waited for a tick.
func churnOne(ctx context.Context, w workload, i int) (ticked bool, err error) {
	if err := w.create(ctx); err != nil {
		return false, err
	}
	if i%2 == 0 {
		if err := w.scale(ctx, userScaledTo, i%20 == 0); err != nil {
			return false, err
		}
	}
	if i%5 == 0 {
		if err := w.awaitReplicas(ctx, autoscaledTo, framework.DefaultTimeout); err != nil {
			return false, err
		}
		ticked = true
	}
	return ticked, w.delete(ctx)
}

// goroutineSummary counts the process's goroutines by stack, for a failure
// message.
func goroutineSummary() string {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	return b.String()
}

// runningApp is scaleplane's app running in this process.
type runningApp struct {
	metricsURL string
	http       *http.Client
}

// startApp runs the binary's own wiring (app.New): webhooks served where
// the framework's configurations point, the controllers and the trigger
// autoscaler ticking every second, and the metrics server on loopback in
// dev mode (plain HTTP, so the test reads /metrics without a token). It
// stops when the test ends, and must stop within its grace period.
func startApp(t *testing.T) *runningApp {
	t.Helper()
	metricsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(framework.FreePort(t)))
	const grace = 30 * time.Second
	a, err := app.New(app.Options{
		Config:                       appConfig(),
		RestConfig:                   cluster.Config,
		CertMode:                     app.CertFiles,
		Namespace:                    "scaleplane-lifecycle-e2e",
		MetricsAddr:                  metricsAddr,
		ProbeAddr:                    "0",
		Dev:                          true,
		SkipControllerNameValidation: true,
		GracefulShutdownTimeout:      grace,
	})
	if err != nil {
		t.Fatalf("build app: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("app stopped with: %v", err)
			}
		case <-time.After(grace):
			t.Errorf("app did not stop within its grace period of %s", grace)
		}
	})
	m := &runningApp{metricsURL: "http://" + metricsAddr + "/metrics", http: &http.Client{}}
	// Ready when the metrics server answers and the webhooks admit a
	// workload (a dry run: the API server calls the webhooks, stores
	// nothing).
	probe := workload{ns: "default", name: "ready-probe"}
	framework.Eventually(t, 2*framework.DefaultTimeout, func(ctx context.Context) (bool, string) {
		select {
		case err := <-done:
			t.Fatalf("app stopped while starting: %v", err)
		default:
		}
		if _, err := scrape(ctx, m.http, m.metricsURL, ""); err != nil {
			return false, err.Error()
		}
		if err := cluster.Client.Create(ctx, probe.object(), client.DryRunAll); err != nil {
			return false, "webhooks not serving yet: " + err.Error()
		}
		return true, ""
	})
	return m
}

func (m *runningApp) workers(ctx context.Context, ns string) (workerState, error) {
	samples, err := scrape(ctx, m.http, m.metricsURL, "")
	if err != nil {
		return workerState{}, err
	}
	return workersOf(samples, ns), nil
}

// awaitRest waits until the autoscaler is at rest: workers exported, none
// busy, no tick in flight, no workload in memory and no series of ns. It
// returns the busy workers it last saw: the stuck ones (0).
func (m *runningApp) awaitRest(t *testing.T, ns string) int {
	t.Helper()
	var last workerState
	seen := "no /metrics read yet"
	framework.Eventually(t, framework.DefaultTimeout, func(ctx context.Context) (bool, string) {
		s, err := m.workers(ctx, ns)
		if err != nil {
			// The last read that worked says more than one cut short by
			// the deadline.
			return false, seen + "; then: " + err.Error()
		}
		last = s
		seen = "autoscaler not at rest: " + s.String()
		return s.Workers > 0 && s.Busy == 0 && s.OldestTickSeconds == 0 && s.Workloads == 0 && len(s.Series) == 0, seen
	})
	return last.Busy
}
