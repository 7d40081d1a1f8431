package controllers_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// setRackStatus writes status.racks as the workload's own operator would:
// read, change, update through the status subresource. With keepOthers
// false it writes a status of its own making, holding only the racks and
// replicas (an operator unaware of the /scale selector drops it).
func setRackStatus(t *testing.T, ns, name string, replicas int64, ready map[string]int64, keepOthers bool) {
	t.Helper()
	ctx := context.Background()
	u, err := get(ctx, "RackedCluster", ns, name)
	if err != nil {
		t.Fatal(err)
	}
	var racks []interface{}
	for _, r := range []string{"a", "b", "c"} {
		racks = append(racks, map[string]interface{}{"name": r, "readyMembers": ready[r]})
	}
	if !keepOthers {
		u.Object["status"] = map[string]interface{}{"replicas": replicas}
	}
	if err := unstructured.SetNestedSlice(u.Object, racks, "status", "racks"); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Client.Status().Update(ctx, u); err != nil {
		t.Fatalf("update status: %v", err)
	}
}

func statusOf(t *testing.T, ns, name string) map[string]interface{} {
	t.Helper()
	u, err := get(context.Background(), "RackedCluster", ns, name)
	if err != nil {
		t.Fatal(err)
	}
	s, _, _ := unstructured.NestedMap(u.Object, "status")
	return s
}

// C2 and C3: status.replicas only when every rack reports the same ready
// count; the selector picks the pods of one rack; nothing else in status
// is touched.
func TestStatusReplicasOnlyWhenRacksAgree(t *testing.T) {
	startManager(t, controllers.Options{})
	ns := cluster.Namespace(t)
	kubectlApply(t, ns, demo)
	const selector = "samples.scaleplane.io/cluster=demo,samples.scaleplane.io/rack=a"
	waitStatus := func(what string, ok func(s map[string]interface{}) bool) {
		t.Helper()
		framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
			u, err := get(ctx, "RackedCluster", ns, "demo")
			if err != nil {
				return false, err.Error()
			}
			s, _, _ := unstructured.NestedMap(u.Object, "status")
			return ok(s), fmt.Sprintf("want %s; status %v", what, s)
		})
	}
	waitStatus("the selector", func(s map[string]interface{}) bool { return s["selector"] == selector })

	// Racks report 3, 3, 2. The operator's write drops the selector, so
	// the selector coming back proves the controller reconciled this very
	// status; replicas must still be the old value then.
	setRackStatus(t, ns, "demo", 2, map[string]int64{"a": 3, "b": 3, "c": 2}, false)
	waitStatus("the selector back", func(s map[string]interface{}) bool { return s["selector"] == selector })
	if got := statusOf(t, ns, "demo")["replicas"]; got != int64(2) {
		t.Errorf("status.replicas = %v while racks report 3, 3, 2; want it unchanged at 2", got)
	}

	// The third rack catches up.
	setRackStatus(t, ns, "demo", 2, map[string]int64{"a": 3, "b": 3, "c": 3}, true)
	before := statusOf(t, ns, "demo")
	waitStatus("replicas 3", func(s map[string]interface{}) bool { return s["replicas"] == int64(3) })
	after := statusOf(t, ns, "demo")
	for _, s := range []map[string]interface{}{before, after} {
		delete(s, "replicas")
		delete(s, "selector")
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("status fields other than replicas and selector changed (-before +after):\n%s", diff)
	}
	waitEvent(t, ns, "demo", "Normal", "StatusReplicasUpdated", "status.replicas 2 -> 3")

	// Server-side apply records what scaleplane owns in status: exactly
	// the two fields, nothing the operator wrote.
	u, err := get(context.Background(), "RackedCluster", ns, "demo")
	if err != nil {
		t.Fatal(err)
	}
	var owned []string
	for _, mf := range u.GetManagedFields() {
		if mf.Manager == "scaleplane" && mf.Subresource == "status" && mf.FieldsV1 != nil {
			owned = append(owned, string(mf.FieldsV1.GetRawBytes()))
		}
	}
	if diff := cmp.Diff([]string{`{"f:status":{"f:replicas":{},"f:selector":{}}}`}, owned); diff != "" {
		t.Errorf("status fields owned by scaleplane (-want +got):\n%s", diff)
	}

	// /scale now reads the truth: kubectl shows it, and an HPA would use
	// the selector of one rack.
	out := kubectl(t, "get", "-n", ns, "rackedcluster/demo", "--subresource=scale", "-o", "jsonpath={.status.replicas} {.status.selector}")
	if diff := cmp.Diff("3 "+selector, out); diff != "" {
		t.Errorf("scale status (-want +got):\n%s", diff)
	}
}
