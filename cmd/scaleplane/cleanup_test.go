package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"

	"github.com/scaleplane/scaleplane/certs"
)

// TestCleanupTouchesOnlyWhatScaleplaneCreated: after an uninstall, cleanup
// lists scaleplane's HPAs, its webhook configurations no Helm release
// manages, its Secret and cert-manager objects, and deletes nothing; with
// --delete (and --kind) it removes exactly those, while a user's HPA,
// Secret and Issuer, another owner's configuration and a Helm release's
// configuration stay.
func TestCleanupTouchesOnlyWhatScaleplaneCreated(t *testing.T) {
	managed := map[string]string{"app.kubernetes.io/managed-by": "scaleplane"}
	meta := func(ns, name string, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}
	}
	hpa := func(ns, name, kind string, ours bool) *autoscalingv2.HorizontalPodAutoscaler {
		var labels map[string]string
		if ours {
			labels = map[string]string{"app.kubernetes.io/managed-by": "scaleplane", "scaleplane.io/workload-kind": kind, "scaleplane.io/owner": "scaleplane"}
		}
		return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: meta(ns, name, labels),
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: kind, Name: name}, MaxReplicas: 3}}
	}
	objs := []client.Object{
		hpa("team-a", "db", "RackedCluster", true),
		hpa("team-b", "fn", "Function", true),
		hpa("team-a", "users-own", "Deployment", false),
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: meta("", "scaleplane-mutating-webhook-configuration", map[string]string{"scaleplane.io/owner": "scaleplane"})},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: meta("", "helm-validating", map[string]string{"scaleplane.io/owner": "scaleplane", "app.kubernetes.io/managed-by": "Helm"})},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: meta("", "cache-operator-validating", map[string]string{"scaleplane.io/owner": "cache-operator"})},
		&corev1.Secret{ObjectMeta: meta("scaleplane-system", "scaleplane-webhook-server-cert", managed)},
		&corev1.Secret{ObjectMeta: meta("scaleplane-system", "users-secret", nil)},
		&cmapi.Issuer{ObjectMeta: meta("scaleplane-system", "scaleplane-ca-issuer", managed)},
		&cmapi.Issuer{ObjectMeta: meta("scaleplane-system", "platform", nil)},
		&cmapi.Certificate{ObjectMeta: meta("scaleplane-system", "scaleplane-serving-cert", managed)},
	}
	c := fake.NewClientBuilder().WithScheme(certs.NewScheme()).WithObjects(objs...).Build()
	ctx := context.Background()

	var out bytes.Buffer
	if err := cleanup(ctx, c, cleanupOptions{Namespace: "scaleplane-system", Owner: "scaleplane"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"db", "fn", "scaleplane-mutating-webhook-configuration", "scaleplane-webhook-server-cert", "scaleplane-ca-issuer", "scaleplane-serving-cert"} {
		if !strings.Contains(out.String(), " "+name+" ") {
			t.Errorf("cleanup's list lacks %s:\n%s", name, out.String())
		}
	}
	for _, name := range []string{"users-own", "helm-validating", "cache-operator-validating", "users-secret", "platform"} {
		if strings.Contains(out.String(), name) {
			t.Errorf("cleanup lists %s, which scaleplane did not create:\n%s", name, out.String())
		}
	}
	if left := remaining(t, c); len(left) != len(objs) {
		t.Errorf("a listing deleted something: %d objects left of %d", len(left), len(objs))
	}

	out.Reset()
	if err := cleanup(ctx, c, cleanupOptions{Namespace: "scaleplane-system", Owner: "scaleplane", Kinds: []string{"RackedCluster"}, Delete: true}, &out); err != nil {
		t.Fatal(err)
	}
	wantLeft := []string{
		"HorizontalPodAutoscaler team-a/users-own", "HorizontalPodAutoscaler team-b/fn", // --kind RackedCluster keeps the Function's
		"Issuer scaleplane-system/platform",
		"Secret scaleplane-system/users-secret",
		"ValidatingWebhookConfiguration /cache-operator-validating", "ValidatingWebhookConfiguration /helm-validating",
	}
	if diff := cmp.Diff(wantLeft, remaining(t, c)); diff != "" {
		t.Errorf("left after cleanup --delete --kind RackedCluster (-want +got):\n%s\n%s", diff, out.String())
	}
}

// remaining lists every object of the test's kinds, by kind then name.
func remaining(t *testing.T, c client.Client) []string {
	t.Helper()
	var out []string
	for _, l := range []struct {
		kind string
		list client.ObjectList
	}{
		{"Certificate", &cmapi.CertificateList{}},
		{"HorizontalPodAutoscaler", &autoscalingv2.HorizontalPodAutoscalerList{}},
		{"Issuer", &cmapi.IssuerList{}},
		{"MutatingWebhookConfiguration", &admissionregistrationv1.MutatingWebhookConfigurationList{}},
		{"Secret", &corev1.SecretList{}},
		{"ValidatingWebhookConfiguration", &admissionregistrationv1.ValidatingWebhookConfigurationList{}},
	} {
		if err := c.List(context.Background(), l.list); err != nil {
			t.Fatal(err)
		}
		items, err := apimeta.ExtractList(l.list)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range items {
			m := o.(client.Object)
			out = append(out, l.kind+" "+m.GetNamespace()+"/"+m.GetName())
		}
	}
	return out
}

// TestCleanupDeletesOnlyThisOwnersHPAs: operators embedding scaleplane
// label their HPAs with their own owner, and cleanup --delete of one owner
// leaves the others' HPAs scaling their workloads. An HPA an older release
// made carries no owner label: it is listed, and deleted only when --kind
// names its kind.
func TestCleanupDeletesOnlyThisOwnersHPAs(t *testing.T) {
	hpa := func(name, kind, owner string) *autoscalingv2.HorizontalPodAutoscaler {
		labels := map[string]string{"app.kubernetes.io/managed-by": "scaleplane", "scaleplane.io/workload-kind": kind}
		if owner != "" {
			labels["scaleplane.io/owner"] = owner
		}
		return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, Labels: labels},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: kind, Name: name}, MaxReplicas: 3}}
	}
	c := fake.NewClientBuilder().WithScheme(certs.NewScheme()).WithObjects(
		hpa("db", "RackedCluster", "scaleplane"),
		hpa("cache", "CacheCluster", "cache-operator"),
		hpa("cache-racked", "RackedCluster", "cache-operator"),
		hpa("old-db", "RackedCluster", ""),
		hpa("old-fn", "Function", ""),
	).Build()
	ctx := context.Background()

	var out bytes.Buffer
	if err := cleanup(ctx, c, cleanupOptions{Namespace: "scaleplane-system", Owner: "scaleplane", Delete: true}, &out); err != nil {
		t.Fatal(err)
	}
	want := []string{"HorizontalPodAutoscaler team-a/cache", "HorizontalPodAutoscaler team-a/cache-racked", "HorizontalPodAutoscaler team-a/old-db", "HorizontalPodAutoscaler team-a/old-fn"}
	if diff := cmp.Diff(want, remaining(t, c)); diff != "" {
		t.Errorf("left after cleanup --delete (-want +got):\n%s\n%s", diff, out.String())
	}
	if !strings.Contains(out.String(), "--kind RackedCluster") || strings.Contains(out.String(), "cache") {
		t.Errorf("cleanup's list should offer --kind for the unlabelled HPAs and not name another owner's:\n%s", out.String())
	}

	out.Reset()
	if err := cleanup(ctx, c, cleanupOptions{Namespace: "scaleplane-system", Owner: "scaleplane", Kinds: []string{"RackedCluster"}, Delete: true}, &out); err != nil {
		t.Fatal(err)
	}
	want = []string{"HorizontalPodAutoscaler team-a/cache", "HorizontalPodAutoscaler team-a/cache-racked", "HorizontalPodAutoscaler team-a/old-fn"}
	if diff := cmp.Diff(want, remaining(t, c)); diff != "" {
		t.Errorf("left after cleanup --delete --kind RackedCluster (-want +got):\n%s\n%s", diff, out.String())
	}
}

// TestCleanupDeletesThisOwnersAdmissionPolicies: in policies mode
// scaleplane writes admission policies and bindings at run time, which
// no manifest holds and which go on mutating and refusing writes of the
// profiled kinds after an uninstall; cleanup --delete removes the owner's
// and leaves another owner's, a Helm release's and a user's.
func TestCleanupDeletesThisOwnersAdmissionPolicies(t *testing.T) {
	meta := func(name, owner, managedBy string) metav1.ObjectMeta {
		labels := map[string]string{}
		if owner != "" {
			labels["scaleplane.io/owner"] = owner
		}
		if managedBy != "" {
			labels["app.kubernetes.io/managed-by"] = managedBy
		}
		return metav1.ObjectMeta{Name: name, Labels: labels}
	}
	c := fake.NewClientBuilder().WithScheme(certs.NewScheme()).WithObjects(
		&admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: meta("scaleplane-functions.example.com", "scaleplane", "scaleplane")},
		&admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: meta("scaleplane-functions.example.com", "scaleplane", "scaleplane")},
		&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: meta("scaleplane-functions.example.com", "scaleplane", "scaleplane")},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: meta("scaleplane-functions.example.com", "scaleplane", "scaleplane")},
		&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: meta("cache-operator-caches", "cache-operator", "scaleplane")},
		&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: meta("helm-rendered", "scaleplane", "Helm")},
		&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: meta("users-own", "", "")},
	).Build()
	var out bytes.Buffer
	if err := cleanup(context.Background(), c, cleanupOptions{Namespace: "scaleplane-system", Owner: "scaleplane", Delete: true}, &out); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, l := range []client.ObjectList{
		&admissionregistrationv1.MutatingAdmissionPolicyList{}, &admissionregistrationv1.MutatingAdmissionPolicyBindingList{},
		&admissionregistrationv1.ValidatingAdmissionPolicyList{}, &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{},
	} {
		if err := c.List(context.Background(), l); err != nil {
			t.Fatal(err)
		}
		items, _ := apimeta.ExtractList(l)
		for _, o := range items {
			left = append(left, o.(client.Object).GetName())
		}
	}
	want := []string{"cache-operator-caches", "helm-rendered", "users-own"}
	if diff := cmp.Diff(want, left); diff != "" {
		t.Errorf("admission policies left after cleanup --delete (-want +got):\n%s\n%s", diff, out.String())
	}
}
