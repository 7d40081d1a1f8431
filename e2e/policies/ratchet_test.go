package policies

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
	binding := policies.For(racked).ValidatingBinding
	if err := cluster.Client.Delete(ctx, binding.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	rebound := false
	rebind := func() {
		if !rebound {
			rebound = true
			if err := cluster.Client.Create(ctx, binding.DeepCopy()); err != nil {
				t.Fatalf("bind the validating policy again: %v", err)
			}
		}
	}
	t.Cleanup(rebind)

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
