package admission

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	for half := range 2 {
		with += run(on, fmt.Sprintf("h%d", half), n/2)
		without += run(off.Name, fmt.Sprintf("h%d", half), n/2)
	}

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
}
