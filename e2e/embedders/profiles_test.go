package embedders

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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

// ownedBy labels a ScaleProfile as owner's: a manager runs only its own
// owner's profiles (profiles.Owns).
func ownedBy(owner string) map[string]string { return map[string]string{v1alpha1.LabelOwner: owner} }

// TestLiveScaleProfiles: a ScaleProfile applied while
// scaleplane runs makes its kind active (the webhooks judge it, its
// controller runs, kubectl get shows Active); a second profile for the
// same kind is a Conflict and takes over when the first is deleted; a
// broken one says why; deleting the last removes the kind's webhook
// entries. No restart.
func TestLiveScaleProfiles(t *testing.T) {
	const owner = "live"
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	port := framework.FreePort(t)
	mgr, d, live := dispatchManager(t, scheme, scheme, port)
	var err error
	base := "https://127.0.0.1:" + strconv.Itoa(port)
	wc := configv1alpha2.Webhook{Owner: owner}
	_, err = profiles.SetupWithManager(mgr, profiles.Options{
		Owner:      owner,
		Dispatcher: d,
		Resync: func(ctx context.Context, active []*profile.Compiled) error {
			return webhooks.SyncDispatchConfigurations(ctx, live, active, webhooks.ConfigurationOptionsFromConfig(wc), func(path string) admissionregistrationv1.WebhookClientConfig {
				return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + path), CABundle: cluster.CAData}
			})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	removeConfigurations(t, owner)
	startManager(t, mgr)

	apply := func(name string, spec v1alpha1.ScaleProfileSpec) {
		t.Helper()
		p := &v1alpha1.ScaleProfile{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: ownedBy(owner)}, Spec: spec}
		if err := live.Create(context.Background(), p); err != nil {
			t.Fatalf("create ScaleProfile %s: %v", name, err)
		}
		t.Cleanup(func() { _ = live.Delete(context.Background(), p) })
	}
	state := func(name, status, reason string) {
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
			return string(c.Status) == status && c.Reason == reason && p.Status.ObservedGeneration == p.Generation,
				fmt.Sprintf("%s: Active=%s %s (%s), want %s %s", name, c.Status, c.Reason, c.Message, status, reason)
		})
	}
	wgProfile := profile.Samples()[2]
	ns := cluster.Namespace(t)
	entry := "workergroups.v1alpha1.samples.scaleplane.io." + owner + ".scaleplane.io"

	apply("workergroups", wgProfile)
	state("workergroups", "True", "Active")
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		return refusedBy(ctx, overMax(ns, workerGroupGVK), entry)
	})
	// The kind's controller runs: C3 writes the /scale selector.
	wg := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"replicas": int64(2), "scalePolicy": map[string]any{"minReplicas": int64(2), "maxReplicas": int64(2)},
	}}}
	wg.SetGroupVersionKind(workerGroupGVK)
	wg.SetNamespace(ns)
	wg.SetName("live")
	if err := cluster.Client.Create(context.Background(), wg); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(workerGroupGVK)
		if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(wg), got); err != nil {
			return false, err.Error()
		}
		sel, _, _ := unstructured.NestedString(got.Object, "status", "hpaPodSelector")
		return sel != "", "status.hpaPodSelector not written yet"
	})

	// A second profile for the kind conflicts; a broken one says why.
	apply("workergroups-again", wgProfile)
	state("workergroups-again", "False", "Conflict")
	broken := profile.Samples()[1]
	broken.Target.Resource = "funcs"
	apply("functions-broken", broken)
	state("functions-broken", "False", "Invalid")

	// The older goes: the other takes over, still judged by the webhooks.
	if err := live.Delete(context.Background(), &v1alpha1.ScaleProfile{ObjectMeta: metav1.ObjectMeta{Name: "workergroups"}}); err != nil {
		t.Fatal(err)
	}
	state("workergroups-again", "True", "Active")
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		return refusedBy(ctx, overMax(ns, workerGroupGVK), entry)
	})

	// The last goes: its entries go, and the kind is admitted unjudged.
	if err := live.Delete(context.Background(), &v1alpha1.ScaleProfile{ObjectMeta: metav1.ObjectMeta{Name: "workergroups-again"}}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		got, err := entries(ctx, owner)
		if err != nil {
			return false, err.Error()
		}
		return len(got) == 0, fmt.Sprintf("entries %v, want none", got)
	})
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		err := cluster.Client.Create(ctx, overMax(ns, workerGroupGVK), client.DryRunAll)
		return err == nil || !apierrors.IsInvalid(err) && !apierrors.IsInternalError(err), fmt.Sprintf("dry-run create: %v", err)
	})
}
