package admission

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/webhooks"
)

// TestKustomizeManifests builds config/webhook with kubectl's kustomize,
// checks that it holds the configurations webhooks.Configurations makes of
// no profiles (scaleplane adds an entry per profile at start-up), and that
// kube-apiserver accepts all of it.
func TestKustomizeManifests(t *testing.T) {
	dir := filepath.Join(framework.RepoRoot(), "config", "webhook")
	out, err := kubectl(t, "kustomize", dir)
	if err != nil {
		t.Fatal(err)
	}
	var gotM *admissionregistrationv1.MutatingWebhookConfiguration
	var gotV *admissionregistrationv1.ValidatingWebhookConfiguration
	var kinds []string
	for _, doc := range strings.Split(out, "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, meta.Kind)
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			gotM = &admissionregistrationv1.MutatingWebhookConfiguration{}
			err = yaml.UnmarshalStrict([]byte(doc), gotM)
		case "ValidatingWebhookConfiguration":
			gotV = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			err = yaml.UnmarshalStrict([]byte(doc), gotV)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"Service", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}, kinds); diff != "" {
		t.Fatalf("kinds (-want +got):\n%s", diff)
	}
	wantM, wantV := webhooks.Configurations(nil, webhooks.ConfigurationOptionsFromConfig(profile.SampleConfiguration().Webhook),
		webhooks.ServiceClientConfig("scaleplane-system", "scaleplane-webhook-service", 443))
	if diff := cmp.Diff(wantM, gotM, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("mutating configuration (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantV, gotV, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("validating configuration (-want +got):\n%s", diff)
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "scaleplane-system"}}
	if err := cluster.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The suite's own configurations carry these names already; renamed
	// copies are created in a dry run, which validates them fully and
	// stores nothing.
	built := strings.NewReplacer(
		wantM.Name, "kustomize-check-mutating",
		wantV.Name, "kustomize-check-validating",
	).Replace(out)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err = cluster.KubectlWithInput(ctx, built, "create", "--dry-run=server", "-f", "-")
	if err != nil {
		t.Fatalf("kube-apiserver refuses config/webhook: %v", err)
	}
	for _, want := range []string{
		"service/scaleplane-webhook-service created (server dry run)",
		"mutatingwebhookconfiguration.admissionregistration.k8s.io/kustomize-check-mutating created (server dry run)",
		"validatingwebhookconfiguration.admissionregistration.k8s.io/kustomize-check-validating created (server dry run)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl apply --dry-run=server printed %q, want a line %q", out, want)
		}
	}
}
