package admission

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// TestCreateLatency reports what the webhooks add to a create: the same
// RackedCluster created in a namespace the webhooks serve and in one they
// skip (webhooksOffLabel). It asserts nothing about time; it logs the
// numbers (go test -v) for the record.
func TestCreateLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement only; skipped with -short")
	}
	const n = 200
	on := namespace(t)
	off := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: on + "-off", Labels: map[string]string{webhooksOffLabel: "true"}}}
	if err := cluster.Client.Create(context.Background(), off); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), off) })

	object := func(ns, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		// Through JSON, so numbers are what the API machinery expects.
		if err := u.UnmarshalJSON([]byte(manifest{kind: "RackedCluster", name: name, namespace: ns, spec: obj{
			"replicas": 3, "scaleConfig": fullConfig(), "racks": racks("a", 1, "b", 2, "c", 5),
		}}.json())); err != nil {
			t.Fatal(err)
		}
		return u
	}
	run := func(ns, prefix string, count int) time.Duration {
		start := time.Now()
		for i := range count {
			if err := cluster.Client.Create(context.Background(), object(ns, fmt.Sprintf("%s-%03d", prefix, i))); err != nil {
				t.Fatalf("create in %s: %v", ns, err)
			}
		}
		return time.Since(start)
	}
	// Warm both paths (connections, TLS to the webhook server, caches).
	run(on, "warm", 10)
	run(off.Name, "warm", 10)

	// Interleaved halves, so that load from other processes on the machine
	// falls on both sides alike.
	var with, without time.Duration
	served0, count0 := webhookServerTime(t)
	for half := range 2 {
		with += run(on, fmt.Sprintf("h%d", half), n/2)
		without += run(off.Name, fmt.Sprintf("h%d", half), n/2)
	}
	served1, count1 := webhookServerTime(t)

	// The objects in the skipped namespace really were not defaulted.
	u := object(off.Name, "h0-000")
	if err := cluster.Client.Get(context.Background(), clientKey(u), u); err != nil {
		t.Fatal(err)
	}
	if got := groupSizes(u, "spec.racks", "members"); fmt.Sprint(got) != "[1 2 5]" {
		t.Errorf("racks in the skipped namespace %v: the webhooks ran there", got)
	}
	t.Logf("%d creates: %v with webhooks (%v each), %v without (%v each); ratio %.2f",
		n, with, with/n, without, without/n, float64(with)/float64(without))
	if reviews := count1 - count0; reviews > 0 {
		t.Logf("%d reviews served in %v each on average (controller-runtime's webhook latency, HTTP handling included)",
			reviews, time.Duration(float64(time.Second)*(served1-served0)/float64(reviews)))
	}
}

// webhookServerTime sums controller_runtime_webhook_latency_seconds over
// every path: the time the webhook server spent on reviews, and how many.
func webhookServerTime(t *testing.T) (seconds float64, count uint64) {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "controller_runtime_webhook_latency_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			seconds += m.GetHistogram().GetSampleSum()
			count += m.GetHistogram().GetSampleCount()
		}
	}
	return seconds, count
}
