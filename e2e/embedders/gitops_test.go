package embedders

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers/profiles"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/webhooks"
)

// TestGitOpsProfilesAndWatchedCRDs: with the webhook entries
// left to a GitOps repository, and nothing polled (NotServedRetry is an
// hour, so only watches can move a state):
//
//  1. a ScaleProfile for a kind whose CRD is not installed is
//     CRDNotServed; installing the CRD makes the kind run at once (the
//     CRD watch), and, its entries not being in the cluster, the profile
//     says WebhooksNotInstalled with the entries and the command to run;
//  2. applying the configurations the repository would hold (what
//     scaleplane render webhooks prints) turns it Active, and objects of
//     the kind are judged by the webhooks;
//  3. a change of the CRD alone (its /scale reads another field) is seen
//     through the watch, and the profile becomes SchemaMismatch;
//  4. the reconciler wrote no webhook configuration at any point.
func TestGitOpsProfilesAndWatchedCRDs(t *testing.T) {
	const owner = "gitops"
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	port := framework.FreePort(t)
	mgr, d, live := dispatchManager(t, scheme, scheme, port)
	var err error
	wc := configv1alpha2.Webhook{Owner: owner}
	_, err = profiles.SetupWithManager(mgr, profiles.Options{
		Owner:      owner,
		Dispatcher: d,
		Missing: func(ctx context.Context, active []*profile.Compiled) (map[schema.GroupVersionResource][]string, error) {
			return webhooks.MissingDispatchEntries(ctx, live, active, webhooks.ConfigurationOptionsFromConfig(wc))
		},
		NotServedRetry: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	removeConfigurations(t, owner)
	ctx := startManager(t, mgr)
	state := func(name, status, reason string, says ...string) {
		t.Helper()
		framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
			p := &v1alpha1.ScaleProfile{}
			if err := live.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
				return false, err.Error()
			}
			c := apimeta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionActive)
			if c == nil {
				return false, name + ": no Active condition yet"
			}
			ok := string(c.Status) == status && c.Reason == reason
			for _, s := range says {
				ok = ok && strings.Contains(c.Message, s)
			}
			return ok, fmt.Sprintf("%s: Active=%s %s (%s), want %s %s saying %q", name, c.Status, c.Reason, c.Message, status, reason, says)
		})
	}

	// 1. The profile first, then its CRD (a copy of WorkerGroup's under a
	// group of its own).
	crd := workerGroupCRDCopy(t, live, "gitops.example.org")
	spec := profile.Samples()[2]
	spec.Target.APIVersion = "gitops.example.org/v1alpha1"
	p := &v1alpha1.ScaleProfile{ObjectMeta: metav1.ObjectMeta{Name: "workergroups.gitops.example.org", Labels: ownedBy(owner)}, Spec: spec}
	if err := live.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Delete(context.Background(), p) })
	state(p.Name, "False", v1alpha1.ProfileReasonCRDNotServed)
	if err := live.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Delete(context.Background(), crd) })
	entry := "workergroups.v1alpha1.gitops.example.org." + owner + ".scaleplane.io"
	state(p.Name, "False", v1alpha1.ProfileReasonWebhooksNotInstalled, entry, "scaleplane render webhooks")

	// 2. The repository's configurations.
	view, err := profile.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	base := "https://127.0.0.1:" + strconv.Itoa(port)
	m, v := webhooks.DispatchConfigurations([]*profile.Compiled{view}, webhooks.ConfigurationOptionsFromConfig(wc), func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + path), CABundle: cluster.CAData}
	})
	for _, obj := range []client.Object{m, v} {
		if err := live.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	state(p.Name, "True", v1alpha1.ProfileReasonActive)
	gvk := schema.GroupVersionKind{Group: "gitops.example.org", Version: "v1alpha1", Kind: "WorkerGroup"}
	ns := cluster.Namespace(t)
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		return refusedBy(ctx, overMax(ns, gvk), entry)
	})

	// 3. The CRD changes under the unchanged profile (its /scale now reads
	// another field): the watch re-reads it, and the profile says the two
	// disagree.
	if err := live.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
		t.Fatal(err)
	}
	crd.Spec.Versions[0].Subresources.Scale.SpecReplicasPath = ".spec.size"
	if err := live.Update(ctx, crd); err != nil {
		t.Fatal(err)
	}
	state(p.Name, "False", v1alpha1.ProfileReasonSchemaMismatch, "replicasPath")

	// 4. Nothing the repository owns was written by the reconciler.
	for _, obj := range []client.Object{m, v} {
		got := obj.DeepCopyObject().(client.Object)
		if err := live.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
			t.Fatal(err)
		}
		if got.GetGeneration() != 1 {
			t.Errorf("%s was changed after it was applied: generation %d", got.GetName(), got.GetGeneration())
		}
	}
}

// workerGroupCRDCopy is the sample WorkerGroup CRD under another group.
func workerGroupCRDCopy(t *testing.T, c client.Client, group string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := c.Get(context.Background(), client.ObjectKey{Name: "workergroups.samples.scaleplane.io"}, &crd); err != nil {
		t.Fatal(err)
	}
	out := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: crd.Spec.Names.Plural + "." + group},
		Spec:       *crd.Spec.DeepCopy(),
	}
	out.Spec.Group = group
	out.Spec.Names.ShortNames = nil
	return out
}
