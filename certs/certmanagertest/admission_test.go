package certmanagertest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/scaleplane/scaleplane/certs"
	"github.com/scaleplane/scaleplane/internal/load"
)

const mutatedLabel = "certs.scaleplane.io/mutated"

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// presentedSerial dials the webhook server and returns the serial of the
// certificate it presents, verified against bundle.
func presentedSerial(addr string, bundle []byte) (string, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle)
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

// TestAdmissionThroughRenewal is the short form of the e2e cert-manager
// test: the real API server calls a controller-runtime webhook server whose
// key pair cert-manager issued (mirrored into its cert dir by the Rotator),
// a forced renewal happens while creates flow at a steady rate, no create
// fails or escapes the mutation, and the server presents the renewed
// certificate without a restart.
func TestAdmissionThroughRenewal(t *testing.T) {
	if testCfg == nil {
		t.Skip(skipReason)
	}
	c, err := client.New(testCfg, client.Options{Scheme: certs.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cm-admission-"}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	o := certs.Options{
		Mode:                          certs.ModeCertManager,
		SecretNamespace:               ns.Name,
		SecretName:                    "scaleplane-webhook-server-cert",
		IPAddresses:                   []net.IP{net.ParseIP("127.0.0.1")},
		MutatingWebhookConfigurations: []string{ns.Name},
		CertDir:                       t.TempDir(),
	}
	if err := certs.EnsureCertManager(t.Context(), c, o); err != nil {
		t.Fatal(err)
	}
	crt, err := WaitReady(t.Context(), c, ns.Name, certs.ServingCertificateName, 1, timeout)
	if err != nil {
		t.Fatal(err)
	}

	r, err := certs.New(testCfg, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	bootCtx, bootCancel := context.WithTimeout(t.Context(), timeout)
	defer bootCancel()
	if err := r.Bootstrap(bootCtx); err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { _ = r.Start(ctx) })

	port := freePort(t)
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: o.CertDir})
	srv.Register("/mutate", &admission.Webhook{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Patched("", jsonpatch.JsonPatchOperation{Operation: "add", Path: "/metadata/labels", Value: map[string]string{mutatedLabel: "true"}})
	})})
	wg.Go(func() { _ = srv.Start(ctx) })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return srv.StartedChecker()(&http.Request{}) == nil, nil
	}); err != nil {
		t.Fatalf("webhook server did not start: %v", err)
	}

	url := "https://" + addr + "/mutate"
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	timeoutSeconds := int32(10)
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ns.Name, Annotations: map[string]string{certs.InjectCAFromAnnotation: certs.InjectCAFrom(o)}},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "mutate.certs.test",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns.Name}},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			TimeoutSeconds:          &timeoutSeconds,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if err := c.Create(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), cfg) })

	secret := &corev1.Secret{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns.Name, Name: o.SecretName}, secret); err != nil {
		t.Fatal(err)
	}
	bundle := secret.Data[certs.CAKey]
	// The API server learns the injected caBundle through its informer: wait
	// until a create is admitted and mutated before measuring.
	var seq atomic.Int64
	create := func(ctx context.Context) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: fmt.Sprintf("cm-%d", seq.Add(1))}}
		if err := c.Create(ctx, cm); err != nil {
			return err
		}
		if cm.Labels[mutatedLabel] != "true" {
			return fmt.Errorf("configmap %s was not mutated", cm.Name)
		}
		return nil
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		return create(ctx) == nil, nil
	}); err != nil {
		t.Fatalf("API server never admitted through the webhook: %v (last: %v)", err, create(t.Context()))
	}
	before, err := presentedSerial(addr, bundle)
	if err != nil {
		t.Fatal(err)
	}

	load := load.Start(t.Context(), 20*time.Millisecond, create)

	// Admissions flow before the renewal too, so the measurement spans it.
	_ = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return load.OK()+load.Failed() >= 10, nil
	})
	if err := Renew(t.Context(), c, ns.Name, certs.ServingCertificateName); err != nil {
		t.Fatal(err)
	}
	if _, err := WaitReady(t.Context(), c, ns.Name, certs.ServingCertificateName, *crt.Status.Revision+1, timeout); err != nil {
		t.Fatal(err)
	}
	var after string
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		after, err = presentedSerial(addr, bundle)
		return err == nil && after != before, err
	}); err != nil {
		t.Fatalf("webhook server still presents serial %s after renewal: %v", before, err)
	}
	// Keep admitting after the switch until a few creates went through the
	// renewed certificate's connections too.
	settled := load.OK()
	_ = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return load.OK() >= settled+10, nil
	})
	load.Stop()

	if diff := cmp.Diff(int64(0), load.Failed()); diff != "" {
		t.Errorf("failed admissions out of %d (last: %v) (-want +got):\n%s", load.OK()+load.Failed(), load.LastErr(), diff)
	}
	renewed := &corev1.Secret{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns.Name, Name: o.SecretName}, renewed); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bundle, renewed.Data[certs.CAKey]) {
		t.Errorf("renewal changed the CA; the serving renewal should keep caBundle")
	}
	t.Logf("%d admissions through renewal, serial %s -> %s", load.OK(), before, after)
}
