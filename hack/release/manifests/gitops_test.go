package manifests

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/certs"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/profile"
)

// TestChartGitOpsIsRender: with gitOps.enabled the chart runs
// scaleplane with --gitops and holds every webhook entry itself, equal to
// what `scaleplane render webhooks` prints for the same profiles and
// settings (names, paths, rules, selectors, timeout, the CA injection
// annotation); without it the chart renders the same entries, which
// scaleplane keeps in line. GitOps mode with self-signed certificates is
// refused.
func TestChartGitOpsIsRender(t *testing.T) {
	values := EveryOption()
	objs := render(t, values)
	// The configuration the Deployment runs with, as the chart renders it
	// (selectors, excluded namespaces, failure policies, timeout).
	data, _, _ := unstructured.NestedString(Find(objs, "ConfigMap", "scaleplane-config").Object, "data", "scaleplane-config.yaml")
	cfg, _, err := configv1alpha2.Parse([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	views, err := profile.CompileAll(cfg.Profiles)
	if err != nil {
		t.Fatal(err)
	}
	want := app.RenderWebhookConfigurations(app.Options{Config: cfg, Namespace: Namespace, CertMode: app.CertCertManager}, views)
	var args []any
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			c, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			args, _ = c[0].(map[string]any)["args"].([]any)
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			var w client.Object
			for _, x := range want {
				if x.GetObjectKind().GroupVersionKind().Kind == o.GetKind() {
					w = x
				}
			}
			got := w.DeepCopyObject().(client.Object)
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, got); err != nil {
				t.Fatalf("%s: %v", o.GetName(), err)
			}
			if got.GetName() != w.GetName() || got.GetLabels()["scaleplane.io/owner"] != "scaleplane" {
				t.Errorf("%s: name or owner label differ from render's %s", got.GetName(), w.GetName())
			}
			if diff := cmp.Diff(w.GetAnnotations()[certs.InjectCAFromAnnotation], got.GetAnnotations()[certs.InjectCAFromAnnotation]); diff != "" {
				t.Errorf("%s: %s (-render +chart):\n%s", o.GetName(), certs.InjectCAFromAnnotation, diff)
			}
			if diff := cmp.Diff(webhooksOf(w), webhooksOf(got)); diff != "" {
				t.Errorf("%s: entries (-scaleplane render +chart):\n%s", o.GetName(), diff)
			}
		}
	}
	if !slices.Contains(args, any("--gitops")) {
		t.Errorf("the Deployment's args %q lack --gitops", args)
	}

	// Outside GitOps mode the chart renders the same entries, so helm
	// template and helm diff show the real admission policy.
	values["gitOps"] = map[string]any{"enabled": false}
	for _, o := range render(t, values) {
		if o.GetKind() == "MutatingWebhookConfiguration" || o.GetKind() == "ValidatingWebhookConfiguration" {
			n, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			if len(n) != 3 && len(n) != 6 {
				t.Errorf("%s has %d entries outside GitOps mode, want the profiles' (3 mutating, 6 validating)", o.GetName(), len(n))
			}
		}
	}
}

func webhooksOf(o client.Object) any {
	switch c := o.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		return c.Webhooks
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		return c.Webhooks
	}
	return nil
}
