package certmanager

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/certs"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
)

// TestBreakGlassRunbook runs docs/production.md's break-glass blocks as
// written, with the real kubectl, against a scaleplane whose every process
// is gone:
//
//  1. with scaleplane up, writes are defaulted (fan-out);
//  2. with it down, the fail-closed entries refuse every write;
//  3. the namespace label lets that namespace's writes through, and only
//     those;
//  4. deleting the configurations lets every write through;
//  5. scaleplane started again recreates every entry as the configuration
//     says (failure policy Fail), writes are defaulted again, and a
//     labelled namespace stays out until the undo block runs.
func TestBreakGlassRunbook(t *testing.T) {
	ctx := t.Context()
	c := cluster.Client
	ensureNamespace(t, namespace)
	nsA, nsB := "breakglass-a", "breakglass-b"
	for _, ns := range []string{nsA, nsB} {
		ensureNamespace(t, ns)
	}
	port, probePort := freePort(t), freePort(t)

	stop := runSelfSigned(t, port, probePort)
	for _, ns := range []string{nsA, nsB} {
		obj := rackedCluster(ns, "db", 3, 1, 2, 4)
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %s/db with scaleplane up: %v", ns, err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), rackedCluster(ns, "db", 0)) })
		if err := setReplicas(ctx, ns, 3); err != nil {
			t.Fatalf("write %s/db with scaleplane up: %v", ns, err)
		}
		wantRacks(t, ns, 3)
	}

	// Every process gone: the entries still point at it, with Fail.
	stop()
	for _, ns := range []string{nsA, nsB} {
		framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
			err := setReplicas(ctx, ns, 5)
			return err != nil && strings.Contains(err.Error(), "failed calling webhook"), fmt.Sprintf("write to %s with scaleplane down: %v, want refused (failed calling webhook)", ns, err)
		})
	}

	// One namespace: the label.
	runDocCommandsIn(t, ctx, "production.md", "break-glass-namespace", map[string]string{"NAMESPACE": nsA}, nil)
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		err := setReplicas(ctx, nsA, 5)
		return err == nil, fmt.Sprintf("write to labelled %s: %v", nsA, err)
	})
	wantRacks(t, nsA, 3) // admitted unchecked: nothing fanned out
	if err := setReplicas(ctx, nsB, 5); err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Errorf("write to %s (not labelled) with scaleplane down: %v, want still refused", nsB, err)
	}

	// Every namespace: the configurations deleted.
	runDocCommandsIn(t, ctx, "production.md", "break-glass-cluster", nil, nil)
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		err := setReplicas(ctx, nsB, 5)
		return err == nil, fmt.Sprintf("write to %s after the configurations were deleted: %v", nsB, err)
	})

	// scaleplane back on the same address: every entry is the
	// configuration's again.
	runSelfSigned(t, port, probePort)
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := c.Get(ctx, client.ObjectKey{Name: validatingName}, v); err != nil {
			return false, fmt.Sprintf("validating configuration: %v", err)
		}
		if len(v.Webhooks) == 0 {
			return false, "validating configuration has no entries yet"
		}
		for _, w := range v.Webhooks {
			if *w.FailurePolicy != admissionregistrationv1.Fail {
				return false, fmt.Sprintf("entry %s has failurePolicy %s, want the configuration's Fail", w.Name, *w.FailurePolicy)
			}
		}
		return true, ""
	})
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		if err := setReplicas(ctx, nsB, 6); err != nil {
			return false, fmt.Sprintf("write to %s with scaleplane back: %v", nsB, err)
		}
		got := racks(t, nsB)
		return equalAll(got, 6), fmt.Sprintf("%s racks %v after replicas 6, want each fanned out by the webhook", nsB, got)
	})

	// The label outlives the restart: an invalid scale config is admitted
	// in nsA, refused once the undo block ran.
	invalid := func(name string) *unstructured.Unstructured {
		u := rackedCluster(nsA, name, 2, 2)
		if err := unstructured.SetNestedMap(u.Object, map[string]any{"minReplicas": int64(5), "maxReplicas": int64(2)}, "spec", "scaleConfig"); err != nil {
			t.Fatal(err)
		}
		return u
	}
	if err := c.Create(ctx, invalid("unchecked")); err != nil {
		t.Errorf("create with min > max in labelled %s with scaleplane back: %v, want admitted (the namespace is out of scaleplane)", nsA, err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), rackedCluster(nsA, "unchecked", 0)) })
	runDocCommandsIn(t, ctx, "production.md", "break-glass-undo", map[string]string{"NAMESPACE": nsA}, nil)
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		err := c.Create(ctx, invalid("checked"))
		if err == nil {
			_ = c.Delete(ctx, rackedCluster(nsA, "checked", 0))
		}
		return apierrors.IsInvalid(err), fmt.Sprintf("create with min > max in %s after the undo: %v, want 422", nsA, err)
	})
}

// TestClusterIssuerNoSelfSignedObjects: in cert-manager mode with an issuer
// of the platform's (--cert-manager-issuer ClusterIssuer/NAME), scaleplane
// creates only the serving Certificate, signed by that issuer: no Issuer and
// no CA Certificate of its own; and admission works over the chain it
// issued.
func TestClusterIssuerNoSelfSignedObjects(t *testing.T) {
	certManager(t)
	ctx := t.Context()
	c, err := client.New(cluster.Config, client.Options{Scheme: certs.NewScheme()})
	if err != nil {
		t.Fatalf("build client: %v", err)
	}
	const ns, issuer = "scaleplane-platform-issuer", "platform-ca"
	ensureNamespace(t, ns)
	ci := &cmapi.ClusterIssuer{
		ObjectMeta: metav1.ObjectMeta{Name: issuer},
		Spec:       cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{SelfSigned: &cmapi.SelfSignedIssuer{}}},
	}
	if err := c.Create(ctx, ci); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create ClusterIssuer: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ci) })

	ref, err := app.ParseIssuerRef("ClusterIssuer/" + issuer)
	if err != nil {
		t.Fatal(err)
	}
	port, probePort := freePort(t), freePort(t)
	cfg := profile.SampleConfiguration()
	cfg.Webhook.Host = "127.0.0.1"
	cfg.Webhook.Port = port
	cfg.Webhook.CertDir = filepath.Join(t.TempDir(), "certs")
	runApp(t, app.Options{
		Config:                       cfg,
		RestConfig:                   cluster.Config,
		CertMode:                     app.CertCertManager,
		CertManagerIssuer:            ref,
		Namespace:                    ns,
		SecretName:                   secretName,
		WebhookURL:                   "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		WebhookIPs:                   []string{"127.0.0.1"},
		MetricsAddr:                  "0",
		ProbeAddr:                    net.JoinHostPort("127.0.0.1", strconv.Itoa(probePort)),
		SkipControllerNameValidation: true,
	})
	t.Cleanup(deleteWebhookConfigurations)

	issuers := &cmapi.IssuerList{}
	if err := c.List(ctx, issuers, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(issuers.Items) != 0 {
		t.Errorf("scaleplane created %d Issuers in %s (first %s), want none: the platform's ClusterIssuer signs", len(issuers.Items), ns, issuers.Items[0].Name)
	}
	crts := &cmapi.CertificateList{}
	if err := c.List(ctx, crts, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, crt := range crts.Items {
		names = append(names, crt.Name)
		want := cmmeta.IssuerReference{Name: issuer, Kind: "ClusterIssuer", Group: "cert-manager.io"}
		if crt.Spec.IssuerRef != want {
			t.Errorf("Certificate %s issuerRef %+v, want %+v", crt.Name, crt.Spec.IssuerRef, want)
		}
	}
	if len(names) != 1 || names[0] != certs.ServingCertificateName {
		t.Errorf("Certificates in %s: %v, want only %s", ns, names, certs.ServingCertificateName)
	}

	// Admission over the chain the ClusterIssuer signed.
	obj := rackedCluster(ns, "issued", 2, 1, 3)
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		err := c.Create(ctx, obj.DeepCopy())
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return false, fmt.Sprintf("create: %v", err)
		}
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(rackedClusterGVK)
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
			return false, err.Error()
		}
		if err := mutated(got, 2); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	_ = c.Delete(ctx, obj)
}

// runSelfSigned runs newApp's app in self-signed mode until the test ends
// or stop is called, and waits until it is ready.
func runSelfSigned(t *testing.T, port, probePort int) (stop func()) {
	t.Helper()
	a := newApp(t, app.CertSelfSigned, port, probePort)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("app stopped with: %v", err)
		}
	}
	t.Cleanup(func() {
		stop()
		deleteWebhookConfigurations()
	})
	waitReady(t, done, net.JoinHostPort("127.0.0.1", strconv.Itoa(probePort)))
	return stop
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	err := cluster.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	// A namespace an earlier run labelled for break-glass is given back.
	nsObj := &corev1.Namespace{}
	if err := cluster.Client.Get(context.Background(), client.ObjectKey{Name: name}, nsObj); err == nil && nsObj.Labels[v1alpha1.LabelAdmission] != "" {
		delete(nsObj.Labels, v1alpha1.LabelAdmission)
		if err := cluster.Client.Update(context.Background(), nsObj); err != nil {
			t.Fatalf("unlabel namespace %s: %v", name, err)
		}
	}
}

// setReplicas writes spec.replicas of ns/db, retrying conflicts.
func setReplicas(ctx context.Context, ns string, replicas int64) error {
	for range 5 {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(rackedClusterGVK)
		if err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, u); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(u.Object, replicas, "spec", "replicas"); err != nil {
			return err
		}
		err := cluster.Client.Update(ctx, u)
		if !apierrors.IsConflict(err) {
			return err
		}
	}
	return fmt.Errorf("update %s/db: conflict after 5 tries", ns)
}

func racks(t *testing.T, ns string) []int64 {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(rackedClusterGVK)
	if err := cluster.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "db"}, u); err != nil {
		t.Fatalf("get %s/db: %v", ns, err)
	}
	got, err := framework.RackMembers(u)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func wantRacks(t *testing.T, ns string, members int64) {
	t.Helper()
	if got := racks(t, ns); !equalAll(got, members) {
		t.Errorf("%s/db racks %v, want each %d", ns, got, members)
	}
}

func equalAll(got []int64, want int64) bool {
	for _, g := range got {
		if g != want {
			return false
		}
	}
	return len(got) > 0
}
