package manifests

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestChartNoWebhookOnBuiltInKinds: a profile of apps/v1 Deployments gets
// RBAC on deployments and deployments/scale (not on their status, the
// Deployment controller's) but no webhook entry, while a CRD's profile
// beside it keeps its three entries and its status rule.
func TestChartNoWebhookOnBuiltInKinds(t *testing.T) {
	objs := render(t, map[string]any{"profiles": []any{
		map[string]any{"target": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "resource": "deployments"},
			"scaleConfig": map[string]any{"annotation": "scaleplane.io/scale-config"}},
		map[string]any{"target": map[string]any{"apiVersion": "samples.scaleplane.io/v1alpha1", "kind": "Function", "resource": "functions"},
			"scaleConfig": map[string]any{"path": ".spec.scaleConfig"}},
	}})
	names := func(kind, name string) []string {
		o := Find(objs, kind, name)
		if o == nil {
			t.Fatalf("no %s %s in %v", kind, name, Kinds(objs))
		}
		var out []string
		hooks, _ := o.Object["webhooks"].([]any)
		for _, h := range hooks {
			out = append(out, h.(map[string]any)["name"].(string))
		}
		return out
	}
	if diff := cmp.Diff([]string{"functions.v1alpha1.samples.scaleplane.io.scaleplane.scaleplane.io"},
		names("MutatingWebhookConfiguration", "scaleplane-mutating-webhook-configuration")); diff != "" {
		t.Errorf("mutating entries (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"functions.v1alpha1.samples.scaleplane.io.scaleplane.scaleplane.io", "scale.functions.v1alpha1.samples.scaleplane.io.scaleplane.scaleplane.io"},
		names("ValidatingWebhookConfiguration", "scaleplane-validating-webhook-configuration")); diff != "" {
		t.Errorf("validating entries (-want +got):\n%s", diff)
	}
	role := Find(objs, "ClusterRole", "scaleplane-profiled-kinds-role")
	if role == nil {
		t.Fatalf("no profiled kinds role in %v", Kinds(objs))
	}
	var resources []string
	for _, r := range role.Object["rules"].([]any) {
		rule := r.(map[string]any)
		if rule["apiGroups"].([]any)[0] == "apps" {
			for _, res := range rule["resources"].([]any) {
				resources = append(resources, res.(string))
			}
		}
	}
	if diff := cmp.Diff([]string{"deployments", "deployments/scale", "deployments/finalizers"}, resources); diff != "" {
		t.Errorf("RBAC on apps (-want +got):\n%s", diff)
	}
	var crdStatus bool
	for _, r := range role.Object["rules"].([]any) {
		rule := r.(map[string]any)
		crdStatus = crdStatus || rule["resources"].([]any)[0] == "functions/status"
	}
	if !crdStatus {
		t.Errorf("the CRD's profile lost its status rule: %v", role.Object["rules"])
	}
}
