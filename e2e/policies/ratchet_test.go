package policies

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/policies"
)

// TestUpdateKeepingInvalidScalingFieldsIsAdmitted: validation ratchets as
// the webhook's does: an object stored while the validating policy was
// not bound (here: its binding removed for a moment) keeps its invalid
// racks through an update of other fields, and an update that changes R
// while they stay invalid is refused.
func TestUpdateKeepingInvalidScalingFieldsIsAdmitted(t *testing.T) {
	install(t)
	ns := cluster.Namespace(t)
	ctx := context.Background()
	rebind := unbind(t, policies.For(racked).ValidatingBinding)

	// Until the API server drops the binding, each attempt is refused.
	var stored string
	n := 0
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		n++
		name := fmt.Sprintf("stored-%d", n)
		u := framework.RackedCluster(ns, name, 2)
		_ = unstructured.SetNestedSlice(u.Object, []interface{}{map[string]interface{}{"name": "a"}, map[string]interface{}{"name": "a"}}, "spec", "racks")
		if err := cluster.Client.Create(ctx, u); err != nil {
			return false, fmt.Sprintf("still refused: %v", err)
		}
		stored = name
		return true, ""
	})
	rebind()
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		n++
		bad := framework.RackedCluster(ns, fmt.Sprintf("probe-%d", n), 1)
		_ = unstructured.SetNestedSlice(bad.Object, []interface{}{map[string]interface{}{"name": "a"}, map[string]interface{}{"name": "a"}}, "spec", "racks")
		err := cluster.Client.Create(ctx, bad)
		return err != nil && fromPolicy(err), fmt.Sprintf("the validating policy is not bound again yet: %v", err)
	})

	u := get(t, ns, stored)
	u.SetLabels(map[string]string{"team": "storage"})
	if err := cluster.Client.Update(ctx, u); err != nil {
		t.Errorf("an update of a label only: %v (want admitted, the racks are as stored)", err)
	}
	u = get(t, ns, stored)
	_ = unstructured.SetNestedField(u.Object, int64(3), "spec", "replicas")
	err := cluster.Client.Update(ctx, u)
	if err == nil || !fromPolicy(err) {
		t.Errorf("an update of replicas with duplicate racks: %v, want the policy's refusal", err)
	}
}

// TestPinStoredWithoutABoundFollowsReplicas: M3 reads the stored config
// with M2's bounds, as the webhook's pinsFollow does: a config stored as
// {maxReplicas: 1} (the mutating policy unbound for a moment) with
// replicas 1 is a pin at 1, and moves to 5 with replicas.
func TestPinStoredWithoutABoundFollowsReplicas(t *testing.T) {
	install(t)
	ns := cluster.Namespace(t)
	ctx := context.Background()
	rebind := unbind(t, policies.For(racked).MutatingBinding)

	var stored string
	n := 0
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		n++
		name := fmt.Sprintf("stored-%d", n)
		u := framework.RackedCluster(ns, name, 1)
		_ = unstructured.SetNestedMap(u.Object, map[string]interface{}{"maxReplicas": int64(1)}, "spec", "scaleConfig")
		if err := cluster.Client.Create(ctx, u); err != nil {
			return false, fmt.Sprintf("create: %v", err)
		}
		if _, ok, _ := unstructured.NestedInt64(u.Object, "spec", "scaleConfig", "minReplicas"); ok {
			return false, "the mutating policy still fills minReplicas"
		}
		stored = name
		return true, ""
	})
	rebind()
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		n++
		probe := framework.RackedCluster(ns, fmt.Sprintf("probe-%d", n), 2)
		if err := cluster.Client.Create(ctx, probe); err != nil {
			return false, err.Error()
		}
		_, ok, _ := unstructured.NestedMap(probe.Object, "spec", "scaleConfig")
		return ok, "the mutating policy is not bound again yet"
	})

	old := get(t, ns, stored)
	u := old.DeepCopy()
	_ = unstructured.SetNestedField(u.Object, int64(5), "spec", "replicas")
	want, causes := webhookDecision(racked, old, u)
	if len(causes) > 0 {
		t.Fatalf("the webhook refuses: %v", causes.ToAggregate())
	}
	got, err := update(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	if diff := decisionDiff(want, nil, got, nil); diff != "" {
		t.Errorf("the policies decide otherwise than the webhook:\n%s", diff)
	}
	if c, _, _ := unstructured.NestedMap(got.Object, "spec", "scaleConfig"); c["minReplicas"] != int64(5) || c["maxReplicas"] != int64(5) {
		t.Errorf("scaleConfig %v, want pinned at 5", c)
	}
}

// unbind deletes a policy's binding for a moment, so that an object can be
// stored as an API server without it would store it. The returned rebind
// creates it again (once; the test's cleanup calls it too).
func unbind(t *testing.T, binding client.Object) (rebind func()) {
	t.Helper()
	ctx := context.Background()
	if err := cluster.Client.Delete(ctx, binding.DeepCopyObject().(client.Object)); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	rebind = func() {
		once.Do(func() {
			if err := cluster.Client.Create(ctx, binding.DeepCopyObject().(client.Object)); err != nil {
				t.Errorf("bind %s again: %v", binding.GetName(), err)
			}
		})
	}
	t.Cleanup(rebind)
	return rebind
}
