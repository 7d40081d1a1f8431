package liveprofiles_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// TestLivePoliciesFollowTheScaleProfile: with webhook.admission: policies,
// a ScaleProfile applied with kubectl gets its admission policies and
// bindings, a change of the profile (its maxReplicas) reaches the
// validating policy, and deleting the profile removes all four.
func TestLivePoliciesFollowTheScaleProfile(t *testing.T) {
	startAppWith(t, "", configv1alpha2.AdmissionPolicies, false)
	const name = "cassandraclusters.db.example.org"
	t.Cleanup(func() { _, _ = cluster.Kubectl(context.Background(), "delete", "sprof", name, "--ignore-not-found") })
	ctx := context.Background()
	if out, err := cluster.Kubectl(ctx, "apply", "--server-side", "-f", filepath.Join(testdata(), "database.golden")); err != nil {
		t.Fatalf("kubectl apply the CassandraCluster profile: %v\n%s", err, out)
	}
	policy := "scaleplane-" + name
	objects := func() []client.Object {
		return []client.Object{
			&admissionregistrationv1.MutatingAdmissionPolicy{}, &admissionregistrationv1.MutatingAdmissionPolicyBinding{},
			&admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{},
		}
	}
	bound := func(n int32) (bool, string) {
		var missing []string
		for _, obj := range objects() {
			if err := cluster.Client.Get(ctx, client.ObjectKey{Name: policy}, obj); err != nil {
				missing = append(missing, fmt.Sprintf("%T: %v", obj, err))
				continue
			}
			if o := obj.GetLabels()[v1alpha1.LabelOwner]; o != configv1alpha2.DefaultOwner {
				missing = append(missing, fmt.Sprintf("%T labelled for owner %q", obj, o))
			}
			if vap, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok {
				var all strings.Builder
				for _, v := range vap.Spec.Variables {
					all.WriteString(v.Expression)
				}
				if !strings.Contains(all.String(), fmt.Sprintf("<= %d", n)) {
					missing = append(missing, fmt.Sprintf("the validating policy does not bound replicas by %d", n))
				}
			}
		}
		return len(missing) == 0, strings.Join(missing, "; ")
	}
	framework.Eventually(t, 0, func(context.Context) (bool, string) { return bound(1000) })

	if out, err := cluster.Kubectl(ctx, "patch", "sprof", name, "--type=merge", "-p", `{"spec":{"maxReplicas":7}}`); err != nil {
		t.Fatalf("kubectl patch the profile's maxReplicas: %v\n%s", err, out)
	}
	framework.Eventually(t, 0, func(context.Context) (bool, string) { return bound(7) })

	if out, err := cluster.Kubectl(ctx, "delete", "sprof", name); err != nil {
		t.Fatalf("kubectl delete the profile: %v\n%s", err, out)
	}
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		var left []string
		for _, obj := range objects() {
			if err := cluster.Client.Get(ctx, client.ObjectKey{Name: policy}, obj); !apierrors.IsNotFound(err) {
				left = append(left, fmt.Sprintf("%T: %v", obj, err))
			}
		}
		return len(left) == 0, fmt.Sprintf("left after the profile's deletion: %v", left)
	})
}
