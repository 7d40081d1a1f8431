package webhooks

import (
	"context"
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/profile"
)

// MissingDispatchEntries reads the two webhook configurations named in wc
// and returns, for each of views' kinds that they do not route to the
// dispatcher, the entries it lacks ("<configuration>: <entry>"). It writes
// nothing: in GitOps mode the configurations are the user's repository's
// (scaleplane render webhooks prints them), and this is how a kind whose
// entries were not committed is reported instead of being admitted
// unjudged in silence. An entry counts when it has the name
// DispatchConfigurations gives it, calls the dispatcher's path for the kind
// and has the kind's rules; its Service or URL, CA bundle and tuning are
// the repository's to choose.
func MissingDispatchEntries(ctx context.Context, c client.Reader, views []*profile.Compiled, wc ConfigurationOptions) (map[schema.GroupVersionResource][]string, error) {
	views = slices.DeleteFunc(slices.Clone(views), func(v *profile.Compiled) bool { return !v.Admission() })
	wantM, wantV := configurations(views, wc, pathOnly, dispatchPaths)
	haveM := &admissionregistrationv1.MutatingWebhookConfiguration{}
	haveV := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	for _, obj := range []client.Object{haveM, haveV} {
		name := wantM.Name
		if obj == client.Object(haveV) {
			name = wantV.Name
		}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("read webhook configuration %s: %w", name, err)
		}
	}
	type have struct {
		cc    admissionregistrationv1.WebhookClientConfig
		rules []admissionregistrationv1.RuleWithOperations
	}
	present := map[string]have{}
	for _, w := range haveM.Webhooks {
		present[haveM.Name+": "+w.Name] = have{w.ClientConfig, w.Rules}
	}
	for _, w := range haveV.Webhooks {
		present[haveV.Name+": "+w.Name] = have{w.ClientConfig, w.Rules}
	}
	missing := map[schema.GroupVersionResource][]string{}
	check := func(gvr schema.GroupVersionResource, config, name string, want admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations) {
		h, ok := present[config+": "+name]
		if !ok || !callsPath(h.cc, *want.Service.Path) || !equality.Semantic.DeepEqual(h.rules, rules) {
			missing[gvr] = append(missing[gvr], config+": "+name)
		}
	}
	for i, v := range views {
		gvr := v.GVR()
		m := wantM.Webhooks[i]
		check(gvr, wantM.Name, m.Name, m.ClientConfig, m.Rules)
		for _, w := range wantV.Webhooks[2*i : 2*i+2] {
			check(gvr, wantV.Name, w.Name, w.ClientConfig, w.Rules)
		}
	}
	return missing, nil
}
