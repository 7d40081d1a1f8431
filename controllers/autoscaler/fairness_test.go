package autoscaler

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/status"
	"github.com/scaleplane/scaleplane/promql"
	"github.com/scaleplane/scaleplane/scaling"
)

// slowSource answers namespace "a" only when released, like a costly
// query; every other namespace at once.
type slowSource struct {
	entered chan string
	release chan struct{}
}

func (s *slowSource) Eval(ctx context.Context, _ string, _ time.Time, vars map[string]string) (promql.Result, error) {
	s.entered <- vars["namespace"]
	if vars["namespace"] == "a" {
		select {
		case <-s.release:
		case <-ctx.Done():
			return promql.Result{}, ctx.Err()
		}
	}
	return promql.ResultOf(1), nil
}

// TestTenantFloodLeavesOtherNamespaceEvaluations: namespace a's workloads
// hold a's share of the evaluation slots and fill its queue; a's next
// trigger is throttled at once (not after a timeout), with the reason on
// the workload, and namespace b's workload is evaluated meanwhile.
func TestTenantFloodLeavesOtherNamespaceEvaluations(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	src := &slowSource{entered: make(chan string, 16), release: make(chan struct{})}
	fair, err := promql.NewFair(promql.FairOptions{Slots: 2, SlotsPerNamespace: 1, MaxWaitingPerNamespace: 1, SamplesPerMinute: -1, EvalTimePerMinute: -1})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{Views: sampleViews(t), Sources: testSources(t, promql.FairSource(src, fair)), Now: func() time.Time { return now }, SampleTimeout: time.Minute, TickTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	k := a.byResource["rackedclusters"]
	w := scaling.Workload{Replicas: ptr(int32(2)), Config: cfg(1, 5).trigger("rps", 1).obj()}
	decide := func(ns, name string) (scaling.Decision, *workload) {
		st := k.get(types.NamespacedName{Namespace: ns, Name: name})
		return k.decide(context.Background(), nil, st, w, now, time.Time{}), st
	}
	done := make(chan scaling.Decision, 2)
	go func() { d, _ := decide("a", "w1"); done <- d }()
	if ns := <-src.entered; ns != "a" {
		t.Fatalf("first evaluation for %q", ns)
	}
	go func() { d, _ := decide("a", "w2"); done <- d }()
	waitUntil(t, func() bool { return fairQueued(fair, "a") })

	// a's share runs and its queue is full: refused at once.
	d, st := decide("a", "w3")
	if !strings.Contains(st.throttled, "rps:") || !strings.Contains(st.throttled, `namespace "a" already has 1 evaluations waiting`) {
		t.Errorf("throttled note %q, want rps named with a's full queue", st.throttled)
	}
	if d.Desired != 2 {
		t.Errorf("a throttled trigger changed the count to %d", d.Desired)
	}
	// b is evaluated while a floods.
	d, st = decide("b", "w1")
	if len(d.Triggers) != 1 || !d.Triggers[0].Valid || st.throttled != "" {
		t.Errorf("b's trigger while a floods: %+v (throttled %q), want a valid value", d.Triggers, st.throttled)
	}
	close(src.release)
	for range 2 {
		if d := <-done; !d.Triggers[0].Valid {
			t.Errorf("a's evaluations that held or waited for a slot: %+v", d.Triggers)
		}
	}
}

// TestThrottledTriggerReasonOnScaling: a decision with throttled triggers
// falls back with reason TriggerThrottled and the note as message.
func TestThrottledTriggerReasonOnScaling(t *testing.T) {
	v := viewOf(t, "RackedCluster")
	note := `throttled triggers keep the count: rps: namespace "a" spent its budget`
	st := status.Build(status.Input{Kind: "RackedCluster", Name: "db", Layout: v.Layout(), State: StateAutoscaling,
		Workload:  scaling.Workload{Replicas: ptr(int32(2)), Config: cfg(1, 5).trigger("rps", 1).obj()},
		Decision:  &scaling.Decision{Current: 2, Desired: 2, Min: 1, Max: 5, Triggers: []scaling.TriggerDecision{{Name: "rps", Problem: note}}},
		Throttled: note, History: &scaling.History{}, Now: time.Unix(0, 0)})
	for _, c := range st.Conditions {
		if c.Type == v1alpha1.ScalingFallback {
			if c.Reason != v1alpha1.ReasonTriggerThrottled || c.Message != note {
				t.Errorf("Fallback %s: %q, want %s: %q", c.Reason, c.Message, v1alpha1.ReasonTriggerThrottled, note)
			}
			return
		}
	}
	t.Error("no Fallback condition")
}

// TestWorkerShareDefersNamespaceAtItsShare: a namespace running its share
// (half) of a kind's workers gets its next reconcile put back, without
// reading anything, so a worker stays for the other namespaces.
func TestWorkerShareDefersNamespaceAtItsShare(t *testing.T) {
	a, err := New(Options{Views: sampleViews(t), Sources: testSources(t, nil), MaxConcurrentReconciles: 4})
	if err != nil {
		t.Fatal(err)
	}
	k := a.byResource["rackedclusters"]
	for range a.workerShare() {
		if !k.shares.Enter("a", a.workerShare()) {
			t.Fatal("a refused below its share")
		}
	}
	res, err := k.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "x"}})
	if err != nil || res.RequeueAfter != workerShareRetry {
		t.Errorf("reconcile at a's share: %+v, %v; want put back after %v", res, err, workerShareRetry)
	}
	if k.deferred.Load() != 1 {
		t.Errorf("deferred = %d, want 1", k.deferred.Load())
	}
	if !k.shares.Enter("b", a.workerShare()) {
		t.Error("b refused a worker while a holds its share")
	}
}

// TestWorkerShareWakesDeferredTickWhenNamespaceWorkerFrees: a reconcile
// put back for its namespace's share is woken as soon as one of that
// namespace's reconciles ends, not after workerShareRetry: under a
// neighbour's load a namespace's own ticks overlap, and a wake-up from
// zero would otherwise wait the retry out.
func TestWorkerShareWakesDeferredTickWhenNamespaceWorkerFrees(t *testing.T) {
	a, err := New(Options{Views: sampleViews(t), Sources: testSources(t, nil), MaxConcurrentReconciles: 4})
	if err != nil {
		t.Fatal(err)
	}
	k := a.byResource["rackedclusters"]
	for range a.workerShare() {
		if !k.shares.Enter("b", a.workerShare()) {
			t.Fatal("b refused below its share")
		}
	}
	for _, name := range []string{"sleeper", "sleeper", "web"} {
		res, err := k.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "b", Name: name}})
		if err != nil || res.RequeueAfter != workerShareRetry {
			t.Fatalf("reconcile of %s at b's share: %+v, %v; want put back", name, res, err)
		}
	}
	// Another namespace's end wakes nothing of b's.
	if !k.shares.Enter("a", a.workerShare()) {
		t.Fatal("a refused")
	}
	k.leaveShare("a")
	var woken []string
	for range a.workerShare() {
		k.leaveShare("b")
		select {
		case ev := <-k.wake:
			woken = append(woken, ev.Object.GetNamespace()+"/"+ev.Object.GetName())
		default:
		}
	}
	// Oldest first, each once however often it was put back.
	if diff := cmp.Diff([]string{"b/sleeper", "b/web"}, woken); diff != "" {
		t.Errorf("woken when b's reconciles ended (-want +got):\n%s", diff)
	}
}

func fairQueued(f *promql.Fair, ns string) bool {
	_, waiting := f.Load(ns)
	return waiting == 1
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("condition not met within 10s: %v", err)
	}
}
