package liveprofiles_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// TestSecondOwnerLeavesProfilesAlone: two binaries with different owners
// run side by side, each leading under its own lease. An unlabelled
// ScaleProfile is the default owner's and one labelled
// scaleplane.io/owner=other is other's: each binary activates and adds
// webhook entries for its own only, so when the second binary exits, the
// first owner's kind is still admitted.
func TestSecondOwnerLeavesProfilesAlone(t *testing.T) {
	const other = "other"
	mine, theirs := "owners-a.example.org", "owners-b.example.org"
	installFunctionCRD(t, mine)
	installFunctionCRD(t, theirs)
	startOwnerApp(t, "", true)
	_, stopOther := startOwnerApp(t, other, true)

	// Each owner leads under its own lease.
	for _, owner := range []string{v1alpha1.DefaultOwner, other} {
		framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
			lease := &coordinationv1.Lease{}
			if err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: appNamespace, Name: app.LeaderElectionIDFor(owner)}, lease); err != nil {
				return false, err.Error()
			}
			holder := ""
			if lease.Spec.HolderIdentity != nil {
				holder = *lease.Spec.HolderIdentity
			}
			return holder != "", fmt.Sprintf("lease %s has no holder", lease.Name)
		})
	}

	ctx := context.Background()
	c := sprofs(t)
	unlabelled := functionProfile(mine)
	labelled := functionProfile(theirs)
	labelled.Labels = map[string]string{v1alpha1.LabelOwner: other}
	for _, p := range []*v1alpha1.ScaleProfile{unlabelled, labelled} {
		if err := c.Create(ctx, p); err != nil {
			t.Fatalf("create ScaleProfile %s: %v", p.Name, err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), p) })
	}
	awaitActive(t, unlabelled.Name)
	awaitActive(t, labelled.Name)
	gvr := func(group string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: group, Version: "v1alpha2", Resource: "functions"}
	}
	// Once each owner has its own kind's entries, neither has the other's.
	for _, tc := range []struct{ owner, own, notOwn string }{{v1alpha1.DefaultOwner, mine, theirs}, {other, theirs, mine}} {
		framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
			got, err := ownerEntries(ctx, tc.owner)
			if err != nil {
				return false, err.Error()
			}
			return len(got[gvr(tc.own)]) == 1 && len(got[gvr(tc.notOwn)]) == 0,
				fmt.Sprintf("%s's mutating entries: %v; want one for %s and none for %s", tc.owner, got, tc.own, tc.notOwn)
		})
	}

	// The second owner exits; the first owner's kind is still judged and
	// admitted.
	stopOther()
	ns := cluster.Namespace(t)
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(2), "runtime": "python312"}}}
	u.SetGroupVersionKind(gvr(mine).GroupVersion().WithKind("Function"))
	u.SetNamespace(ns)
	u.SetName("after-other")
	if err := cluster.Client.Create(ctx, u); err != nil {
		t.Fatalf("create a %s Function after the other owner exited: %v", mine, err)
	}
	if _, pinned, _ := unstructured.NestedMap(u.Object, "spec", "scaleConfig"); !pinned {
		t.Errorf("the default owner's webhooks did not judge the Function: spec %v", u.Object["spec"])
	}
	p := &v1alpha1.ScaleProfile{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(unlabelled), p); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Labels[v1alpha1.LabelOwner]; ok {
		t.Errorf("the unlabelled profile was labelled: %v", p.Labels)
	}
}

// ownerEntries are the resources owner's mutating configuration routes,
// with the names of the entries that route each.
func ownerEntries(ctx context.Context, owner string) (map[schema.GroupVersionResource][]string, error) {
	var m admissionregistrationv1.MutatingWebhookConfiguration
	if err := cluster.Client.Get(ctx, client.ObjectKey{Name: owner + configv1alpha2.MutatingConfigurationSuffix}, &m); err != nil {
		return nil, err
	}
	out := map[schema.GroupVersionResource][]string{}
	for _, w := range m.Webhooks {
		if !strings.HasSuffix(w.Name, "."+owner+v1alpha1.OwnerEntrySuffix) {
			continue
		}
		for _, r := range w.Rules {
			for _, g := range r.APIGroups {
				for _, v := range r.APIVersions {
					for _, res := range r.Resources {
						k := schema.GroupVersionResource{Group: g, Version: v, Resource: res}
						out[k] = append(out[k], w.Name)
					}
				}
			}
		}
	}
	return out, nil
}
