package embedders

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/webhooks"
)

// TestBuilderMovesPerKindEntriesToDispatchPaths: an embedder's entries
// written by an older library (or rendered into its manifests) call the
// per-kind paths; its start-up sync points them at the dispatcher's paths,
// keeping their URL's host and CA bundle, and the kind is judged there
// (docs/upgrade.md, "Per-kind webhook paths").
func TestBuilderMovesPerKindEntriesToDispatchPaths(t *testing.T) {
	ns := cluster.Namespace(t)
	e := &embedder{owner: "migrating-operator", kinds: []schema.GroupVersionKind{functionGVK}, port: framework.FreePort(t)}
	removeConfigurations(t, e.owner)
	var view *profile.Compiled
	for _, p := range profile.Samples() {
		if p.Target.Kind == functionGVK.Kind {
			v, err := profile.Compile(p)
			if err != nil {
				t.Fatal(err)
			}
			view = v
		}
	}
	base := "https://127.0.0.1:" + strconv.Itoa(e.port)
	old := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + path), CABundle: cluster.CAData}
	}
	// What an older release wrote: the entries on the per-kind paths.
	m, v := webhooks.Configurations([]*profile.Compiled{view}, webhooks.ConfigurationOptions{Owner: e.owner}, old)
	m.Webhooks[0].ClientConfig = old(webhooks.MutatePath(view.GVR()))
	v.Webhooks[0].ClientConfig = old(webhooks.ValidatePath(view.GVR()))
	v.Webhooks[1].ClientConfig = old(webhooks.ValidateScalePath(view.GVR()))
	for _, obj := range []client.Object{m, v} {
		if err := cluster.Client.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
	e.start(t)

	gvr := view.GVR()
	want := map[string]string{
		"mutating":         base + webhooks.DispatchPath(webhooks.DispatchMutatePrefix, gvr),
		"validating":       base + webhooks.DispatchPath(webhooks.DispatchValidatePrefix, gvr),
		"validating scale": base + webhooks.DispatchPath(webhooks.DispatchValidateScalePrefix, gvr),
	}
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		m := &admissionregistrationv1.MutatingWebhookConfiguration{}
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Name: e.owner + "-mutating-webhook-configuration"}, m); err != nil {
			return false, err.Error()
		}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Name: e.owner + "-validating-webhook-configuration"}, v); err != nil {
			return false, err.Error()
		}
		got := map[string]string{}
		for _, w := range m.Webhooks {
			got["mutating"] = ptr.Deref(w.ClientConfig.URL, "")
		}
		for _, w := range v.Webhooks {
			role := "validating"
			if len(w.Rules) > 0 && len(w.Rules[0].Resources) > 0 && w.Rules[0].Resources[0] == gvr.Resource+"/scale" {
				role = "validating scale"
			}
			got[role] = ptr.Deref(w.ClientConfig.URL, "")
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return false, fmt.Sprintf("entries call %v, want %v", got, want)
		}
		return true, ""
	})
	entry := "samplefunctions.v1alpha1.samples.scaleplane.io." + e.owner + ".scaleplane.io"
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		return refusedBy(ctx, overMax(ns, functionGVK), entry)
	})
}
