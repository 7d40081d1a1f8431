package webhooks

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/policies"
	"github.com/scaleplane/scaleplane/profile"
)

// policyNames are the names of every admission policy and binding in c,
// by kind.
func policyNames(t *testing.T, c client.Client) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for kind, list := range map[string]client.ObjectList{
		"MutatingAdmissionPolicy":          &admissionregistrationv1.MutatingAdmissionPolicyList{},
		"MutatingAdmissionPolicyBinding":   &admissionregistrationv1.MutatingAdmissionPolicyBindingList{},
		"ValidatingAdmissionPolicy":        &admissionregistrationv1.ValidatingAdmissionPolicyList{},
		"ValidatingAdmissionPolicyBinding": &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{},
	} {
		if err := c.List(context.Background(), list); err != nil {
			t.Fatal(err)
		}
		switch l := list.(type) {
		case *admissionregistrationv1.MutatingAdmissionPolicyList:
			for _, i := range l.Items {
				out[kind] = append(out[kind], i.Name)
			}
		case *admissionregistrationv1.MutatingAdmissionPolicyBindingList:
			for _, i := range l.Items {
				out[kind] = append(out[kind], i.Name)
			}
		case *admissionregistrationv1.ValidatingAdmissionPolicyList:
			for _, i := range l.Items {
				out[kind] = append(out[kind], i.Name)
			}
		case *admissionregistrationv1.ValidatingAdmissionPolicyBindingList:
			for _, i := range l.Items {
				out[kind] = append(out[kind], i.Name)
			}
		}
		slices.Sort(out[kind])
	}
	return out
}

func everyKind(names ...string) map[string][]string {
	out := map[string][]string{}
	for _, k := range []string{"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		out[k] = slices.Sorted(slices.Values(names))
	}
	return out
}

// TestSyncPoliciesFollowTheProfilesAndTheMode: in policies mode the sync
// that owns the webhook entries writes each profile's policies and
// bindings, labelled for its owner; a profile removed loses them, and a
// switch back to webhooks removes the owner's every one. Another owner's
// policy is never touched, and one under a wanted name is an error.
func TestSyncPoliciesFollowTheProfilesAndTheMode(t *testing.T) {
	views := testViews(t)
	ctx := context.Background()
	theirs := policies.ForOwner(views[rackedCluster], "cache-operator")
	objs := append([]client.Object{}, theirs.Objects()...)
	c := fakeClient(t, objs...)
	wc := ConfigurationOptions{Admission: configv1alpha2.AdmissionPolicies}
	svc := ServiceClientConfig("scaleplane-system", "scaleplane-webhook-service", 443)
	ours := []string{policies.Name(views[rackedCluster]), policies.Name(views[function])}
	theirName := theirs.Mutating.Name

	if err := SyncConfigurationsWith(ctx, c, []*profile.Compiled{views[rackedCluster], views[function]}, wc, svc); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(everyKind(append(slices.Clone(ours), theirName)...), policyNames(t, c)); diff != "" {
		t.Errorf("after the first sync (-want +got):\n%s", diff)
	}
	got := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := c.Get(ctx, client.ObjectKey{Name: ours[0]}, got); err != nil {
		t.Fatal(err)
	}
	want := policies.For(views[rackedCluster]).Validating
	if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
		t.Errorf("the validating policy's spec (-want +got):\n%s", diff)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := c.Get(ctx, client.ObjectKey{Name: ours[0]}, binding); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(NamespaceSelector(wc), binding.Spec.MatchResources.NamespaceSelector); diff != "" {
		t.Errorf("the binding reaches other namespaces than the entries (-entries +binding):\n%s", diff)
	}
	if o := got.Labels[v1alpha1.LabelOwner]; o != configv1alpha2.DefaultOwner {
		t.Errorf("owner label %q, want %q", o, configv1alpha2.DefaultOwner)
	}

	// A policy edited by hand is put back.
	got.Spec.Validations = nil
	if err := c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if err := SyncConfigurationsWith(ctx, c, []*profile.Compiled{views[rackedCluster]}, wc, svc); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: ours[0]}, got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
		t.Errorf("the policy edited by hand, after a sync (-want +got):\n%s", diff)
	}
	// The Function's profile is gone: so are its policies.
	if diff := cmp.Diff(everyKind(ours[0], theirName), policyNames(t, c)); diff != "" {
		t.Errorf("after the Function's profile is removed (-want +got):\n%s", diff)
	}

	wc.Admission = configv1alpha2.AdmissionWebhooks
	if err := SyncConfigurationsWith(ctx, c, []*profile.Compiled{views[rackedCluster]}, wc, svc); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(everyKind(theirName), policyNames(t, c)); diff != "" {
		t.Errorf("after the switch to webhooks (-want +got):\n%s", diff)
	}

	// Another owner's policy under the name this owner wants.
	clash := policies.For(views[function]).Validating
	clash.Labels = map[string]string{v1alpha1.LabelOwner: "cache-operator"}
	clash.ObjectMeta = metav1.ObjectMeta{Name: clash.Name, Labels: clash.Labels}
	if err := c.Create(ctx, clash); err != nil {
		t.Fatal(err)
	}
	wc.Admission = configv1alpha2.AdmissionPolicies
	err := SyncPolicies(ctx, c, []*profile.Compiled{views[function]}, wc)
	if !errors.Is(err, errNotOwned) {
		t.Errorf("sync over another owner's policy: %v, want an error saying it is not owned", err)
	}
}

// TestPoliciesModeNarrowsTheWebhookEntries: with the policies on, the
// mutating and validating entries call the webhook only under
// policies.WebhookCondition, and the /scale entry is Ignore (S1 needs the
// main object; the controller fans out when scaleplane is back). In
// webhooks mode the entries have no condition and keep the configured
// failure policies.
func TestPoliciesModeNarrowsTheWebhookEntries(t *testing.T) {
	views := testViews(t)
	svc := ServiceClientConfig("ns", "svc", 443)
	v := []*profile.Compiled{views[rackedCluster]}
	for _, mode := range []string{configv1alpha2.AdmissionWebhooks, configv1alpha2.AdmissionPolicies} {
		t.Run(mode, func(t *testing.T) {
			wc := ConfigurationOptions{Admission: mode}
			m, val := Configurations(v, wc, svc)
			var wantCond []admissionregistrationv1.MatchCondition
			wantScale := admissionregistrationv1.Fail
			if mode == configv1alpha2.AdmissionPolicies {
				wantCond = []admissionregistrationv1.MatchCondition{policies.WebhookCondition(views[rackedCluster])}
				wantScale = admissionregistrationv1.Ignore
			}
			if diff := cmp.Diff(wantCond, m.Webhooks[0].MatchConditions); diff != "" {
				t.Errorf("mutating entry's matchConditions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantCond, val.Webhooks[0].MatchConditions); diff != "" {
				t.Errorf("validating entry's matchConditions (-want +got):\n%s", diff)
			}
			if len(val.Webhooks[1].MatchConditions) != 0 {
				t.Errorf("the /scale entry has matchConditions %v", val.Webhooks[1].MatchConditions)
			}
			if got := *val.Webhooks[1].FailurePolicy; got != wantScale {
				t.Errorf("the /scale entry's failurePolicy %s, want %s", got, wantScale)
			}
			if got := *m.Webhooks[0].FailurePolicy; got != admissionregistrationv1.Fail {
				t.Errorf("the mutating entry's failurePolicy %s, want Fail", got)
			}
		})
	}
}

// TestAutoAdmissionFollowsDiscovery: auto is policies where the API server
// serves the v1 MutatingAdmissionPolicy, webhooks where it does not; an
// empty mode is webhooks, an unknown one an error.
func TestAutoAdmissionFollowsDiscovery(t *testing.T) {
	gv := admissionregistrationv1.SchemeGroupVersion
	with := apimeta.NewDefaultRESTMapper([]schema.GroupVersion{gv})
	with.Add(gv.WithKind("MutatingAdmissionPolicy"), apimeta.RESTScopeRoot)
	without := apimeta.NewDefaultRESTMapper([]schema.GroupVersion{gv})
	without.Add(gv.WithKind("ValidatingAdmissionPolicy"), apimeta.RESTScopeRoot)
	for _, tt := range []struct {
		name, mode string
		mapper     apimeta.RESTMapper
		want       string
	}{
		{"auto on 1.36 and later", "auto", with, "policies"},
		{"auto before 1.36", "auto", without, "webhooks"},
		{"policies asked", "policies", without, "policies"},
		{"left out", "", with, "webhooks"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveAdmission(tt.mapper, tt.mode)
			if err != nil || got != tt.want {
				t.Errorf("ResolveAdmission(%q) = %q, %v; want %q", tt.mode, got, err, tt.want)
			}
		})
	}
	if _, err := ResolveAdmission(with, "cel"); err == nil {
		t.Error("an unknown mode was resolved")
	}
}
