package certs

import (
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
	"github.com/scaleplane/scaleplane/internal/load"
	"gomodules.xyz/jsonpatch/v2"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

const mutatedLabel = "certs.scaleplane.io/mutated"

// TestSelfSignedAdmissionThroughCARotation has the real API server call a
// controller-runtime webhook server while the Rotator replaces the CA (the
// hardest renewal: caBundle changes). Creates flow at a steady rate; none may
// fail, and the server ends up presenting a certificate of the new CA
// without a restart.
func TestSelfSignedAdmissionThroughCARotation(t *testing.T) {
	cfg := needCluster(t)
	c := newTestClient(t, cfg)
	ns := makeNamespace(t, c)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))

	url := "https://" + addr + "/mutate"
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	seconds := int32(10)
	hook := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "mutate.certs.test",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			TimeoutSeconds:          &seconds,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if err := c.Create(t.Context(), hook); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), hook) })

	o := Options{
		SecretNamespace:               ns,
		SecretName:                    "webhook-server-cert",
		IPAddresses:                   []net.IP{net.ParseIP("127.0.0.1")},
		MutatingWebhookConfigurations: []string{ns},
		CertDir:                       t.TempDir(),
		// The CA is replaced about 4s after start and every ~6s after that;
		// 2s of overlap lets the API server's informer see the new bundle.
		CAValidity: 10 * time.Second, CARenewBefore: 6 * time.Second,
		RenewBefore: 2 * time.Second, CAPropagationDelay: 2 * time.Second,
	}
	r, err := New(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	bootCtx, cancelBoot := context.WithTimeout(t.Context(), waitTimeout)
	defer cancelBoot()
	if err := r.Bootstrap(bootCtx); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() { _ = r.Start(ctx) })

	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: o.CertDir})
	srv.Register("/mutate", &admission.Webhook{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Patched("", jsonpatch.JsonPatchOperation{Operation: "add", Path: "/metadata/labels", Value: map[string]string{mutatedLabel: "true"}})
	})})
	wg.Go(func() { _ = srv.Start(ctx) })
	waitFor(t, "webhook server started", func(context.Context) (bool, error) {
		return srv.StartedChecker()(&http.Request{}) == nil, nil
	})

	var seq atomic.Int64
	create := func(ctx context.Context) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%d", seq.Add(1))}}
		if err := c.Create(ctx, cm); err != nil {
			return err
		}
		if cm.Labels[mutatedLabel] != "true" {
			return fmt.Errorf("configmap %s was not mutated", cm.Name)
		}
		return nil
	}
	// The first admissions wait for the API server to learn the bundle.
	waitFor(t, "first admission through the webhook", func(ctx context.Context) (bool, error) {
		return create(ctx) == nil, nil
	})
	s, err := getSecret(t.Context(), c, o)
	if err != nil {
		t.Fatal(err)
	}
	first, err := parseMaterial(s.Data, "")
	if err != nil {
		t.Fatal(err)
	}

	load := load.Start(t.Context(), 20*time.Millisecond, create)

	waitFor(t, "a certificate of a new CA presented by the server", func(ctx context.Context) (bool, error) {
		s, err := getSecret(ctx, c, o)
		if err != nil {
			return false, err
		}
		now, err := parseMaterial(s.Data, "")
		if err != nil || first.ca.cert.Equal(now.ca.cert) {
			return false, nil
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(s.Data[CAKey])
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
		if err != nil {
			return false, nil
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].CheckSignatureFrom(now.ca.cert) == nil, nil
	})
	settled := load.OK()
	waitFor(t, "admissions after the switch", func(context.Context) (bool, error) {
		return load.OK() >= settled+10, nil
	})
	load.Stop()

	if diff := cmp.Diff(int64(0), load.Failed()); diff != "" {
		t.Errorf("failed admissions out of %d (last: %v) (-want +got):\n%s", load.OK()+load.Failed(), load.LastErr(), diff)
	}
	t.Logf("%d admissions through a CA rotation", load.OK())
}
