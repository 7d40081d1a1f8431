package failover

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

var rackedClusters = schema.GroupVersionResource{Group: "samples.scaleplane.io", Version: "v1alpha1", Resource: "rackedclusters"}

// admissions records every write the test sends through the API server
// (each one admitted by scaleplane's webhooks) and every failure.
type admissions struct {
	mu       sync.Mutex
	sent     int
	failures []failure
}

type failure struct {
	What       string
	Start, End time.Time
	Err        error
}

// do runs one write and records it. A write cut short because the test
// is stopping is not counted.
func (a *admissions) do(ctx context.Context, what string, write func(context.Context) error) error {
	start := time.Now()
	err := write(ctx)
	if ctx.Err() != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sent++
	if err != nil {
		a.failures = append(a.failures, failure{What: what, Start: start, End: time.Now(), Err: err})
	}
	return err
}

func (a *admissions) counts() (sent int, failures []failure) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sent, append([]failure(nil), a.failures...)
}

// The steady admission load: loadWorkers loops, each one write every
// loadInterval at most (40/s in all when the API server keeps up), over
// loadObjects objects of its own: it creates them, then keeps changing
// their spec.replicas, so every write is a CREATE or an UPDATE both
// webhooks see and the mutating one patches.
const (
	loadWorkers  = 6
	loadInterval = 150 * time.Millisecond
	loadObjects  = 8
)

func startLoad(ctx context.Context, ns string, adm *admissions) []*framework.Load {
	loads := make([]*framework.Load, 0, loadWorkers)
	for w := range loadWorkers {
		created := make([]bool, loadObjects)
		k := 0
		loads = append(loads, framework.StartLoad(ctx, loadInterval, func(ctx context.Context) error {
			j, round := k%loadObjects, k/loadObjects
			k++
			name := fmt.Sprintf("load-%d-%d", w, j)
			if !created[j] {
				err := adm.do(ctx, "create "+ns+"/"+name, func(ctx context.Context) error {
					return cluster.Client.Create(ctx, framework.RackedCluster(ns, name, 1, 1, 1))
				})
				created[j] = err == nil
				return err
			}
			// 1, 2, 3, 1, ...: every visit changes the value.
			replicas := 1 + round%3
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(framework.RackedClusterGVK)
			obj.SetNamespace(ns)
			obj.SetName(name)
			patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas))
			return adm.do(ctx, fmt.Sprintf("update %s/%s replicas=%d", ns, name, replicas), func(ctx context.Context) error {
				return cluster.Client.Patch(ctx, obj, patch)
			})
		}))
	}
	return loads
}

// scaleCall is one `kubectl scale` the test ran.
type scaleCall struct {
	Workload   string
	Replicas   int64
	Start, End time.Time
	Err        error
}

// scaler runs `kubectl scale` on the workloads in turn, each call one
// more replica than the workload's last, until stopped. Every call it
// starts runs to its end, so the test knows exactly which scales the API
// server took.
type scaler struct {
	mu    sync.Mutex
	calls []scaleCall
	stopc chan struct{}
	done  chan struct{}
}

func startScaler(ns string, workloads []string, initial int64, adm *admissions) *scaler {
	s := &scaler{stopc: make(chan struct{}), done: make(chan struct{})}
	next := map[string]int64{}
	for _, w := range workloads {
		next[w] = initial + 1
	}
	go func() {
		defer close(s.done)
		for i := 0; ; i++ {
			select {
			case <-s.stopc:
				return
			default:
			}
			w := workloads[i%len(workloads)]
			call := scaleCall{Workload: w, Replicas: next[w], Start: time.Now()}
			ctx, cancel := context.WithTimeout(context.Background(), framework.DefaultTimeout)
			call.Err = adm.do(ctx, fmt.Sprintf("kubectl scale %s --replicas=%d", w, call.Replicas), func(ctx context.Context) error {
				_, err := cluster.Kubectl(ctx, "-n", ns, "scale", "rackedclusters.samples.scaleplane.io/"+w, "--replicas="+strconv.FormatInt(call.Replicas, 10))
				return err
			})
			cancel()
			call.End = time.Now()
			if call.Err == nil {
				next[w]++
			}
			s.mu.Lock()
			s.calls = append(s.calls, call)
			s.mu.Unlock()
		}
	}()
	return s
}

// stop ends the loop after the call in flight.
func (s *scaler) stop() {
	close(s.stopc)
	<-s.done
}

func (s *scaler) snapshot() []scaleCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]scaleCall(nil), s.calls...)
}

// scaled returns the replicas of every successful scale of w, in order.
func (s *scaler) scaled(w string) []int64 {
	var out []int64
	for _, c := range s.snapshot() {
		if c.Workload == w && c.Err == nil {
			out = append(out, c.Replicas)
		}
	}
	return out
}

// succeeded counts the successful calls, and the workloads with one that
// started at or after since.
func (s *scaler) succeeded(since time.Time) (total int, workloadsSince map[string]bool) {
	workloadsSince = map[string]bool{}
	for _, c := range s.snapshot() {
		if c.Err != nil {
			continue
		}
		total++
		if !c.Start.Before(since) {
			workloadsSince[c.Workload] = true
		}
	}
	return total, workloadsSince
}

// cutByKill reports whether err is what the API server says when the
// connection to a webhook broke under a call: the peer closed it (EOF) or
// reset it. A refused connection, a timeout or a webhook's answer are not.
func cutByKill(err error) bool {
	msg := err.Error()
	if !strings.Contains(msg, "failed calling webhook") {
		return false
	}
	for _, s := range []string{": EOF", "connection reset by peer", "broken pipe"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
