package policies

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

// TestScaleWithoutScaleplane: with the policies and no scaleplane,
// `kubectl scale` still works, but nothing fans the count out and S1 is
// not checked: a policy on /scale sees only the Scale object, not the
// scale config of the main object. Both wait for scaleplane (the fan-out
// controller's C1, the /scale webhook's S1); docs/design.md lists them.
func TestScaleWithoutScaleplane(t *testing.T) {
	install(t)
	ns := cluster.Namespace(t)
	ctx := context.Background()
	pinned := framework.RackedCluster(ns, "pinned", 2, 1, 1)
	if err := cluster.Client.Create(ctx, pinned); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Kubectl(ctx, "scale", "rackedcluster", "pinned", "-n", ns, "--replicas=4"); err != nil {
		t.Fatalf("kubectl scale of a pinned object: %v", err)
	}
	got := get(t, ns, "pinned")
	// R moved; the racks and the pin stay at 2 until C1 runs.
	want := obj{"replicas": int64(4), "scaleConfig": obj{"minReplicas": int64(2), "maxReplicas": int64(2)},
		"racks": list{obj{"name": "a", "members": int64(2)}, obj{"name": "b", "members": int64(2)}}}
	if diff := cmp.Diff(want, got.Object["spec"]); diff != "" {
		t.Errorf("after kubectl scale (-want +got):\n%s", diff)
	}

	ranged := rackedWithRange(ns, "ranged", 2, 4)
	if err := cluster.Client.Create(ctx, ranged); err != nil {
		t.Fatal(err)
	}
	// The webhook's S1 would refuse 9, outside [2, 4]; the policies cannot.
	if _, err := cluster.Kubectl(ctx, "scale", "rackedcluster", "ranged", "-n", ns, "--replicas=9"); err != nil {
		t.Fatalf("kubectl scale outside the range: %v (S1 is the webhook's; the policies admit it)", err)
	}
	if r, _, _ := unstructured.NestedInt64(get(t, ns, "ranged").Object, "spec", "replicas"); r != 9 {
		t.Errorf("replicas %d after kubectl scale --replicas=9", r)
	}
}

func rackedWithRange(ns, name string, lo, hi int64) *unstructured.Unstructured {
	u := framework.RackedCluster(ns, name, lo, lo)
	_ = unstructured.SetNestedMap(u.Object, map[string]interface{}{"minReplicas": lo, "maxReplicas": hi}, "spec", "scaleConfig")
	return u
}

func get(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(framework.RackedClusterGVK)
	if err := cluster.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	return u
}
