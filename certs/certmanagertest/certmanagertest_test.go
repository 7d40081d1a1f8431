package certmanagertest

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/scaleplane/scaleplane/certs"
)

const timeout = 90 * time.Second

var (
	testCfg    *rest.Config
	skipReason string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		if root, err := repoRoot(); err == nil {
			dir = filepath.Join(root, "bin", "controlplane")
		}
	}
	for _, bin := range []string{filepath.Join(dir, "kube-apiserver"), filepath.Join(dir, "etcd"), Binary()} {
		if _, err := os.Stat(bin); err != nil {
			skipReason = fmt.Sprintf("%s not found: build the control plane and cert-manager with `make tools` (or set KUBEBUILDER_ASSETS and %s)", bin, BinaryEnv)
			return m.Run()
		}
	}
	// As controlplane: a loaded machine (CI builds beside the tests)
	// can take well over envtest's default 20 s to start kube-apiserver.
	env := &envtest.Environment{BinaryAssetsDirectory: dir, ControlPlaneStartTimeout: 90 * time.Second, ControlPlaneStopTimeout: 30 * time.Second}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "start envtest: %v\n", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	if err := InstallCRDs(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cm, err := Start(ctx, cfg, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	testCfg = cfg
	code := m.Run()
	if err := cm.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "cert-manager output:\n%s\n", cm.Logs())
	}
	return code
}

func webhookConfigs(t *testing.T, c client.Client, name string) {
	t.Helper()
	none := admissionregistrationv1.SideEffectClassNone
	url := "https://127.0.0.1:9/never"
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"example.invalid"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}},
	}}
	cc := admissionregistrationv1.WebhookClientConfig{URL: &url}
	objs := []client.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "m.certs.test", ClientConfig: cc, Rules: rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "v.certs.test", ClientConfig: cc, Rules: rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}}},
	}
	for _, obj := range objs {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatalf("create webhook configuration: %v", err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), obj) })
	}
}

func injected(ctx context.Context, c client.Client, name string) ([]byte, []byte, error) {
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, m); err != nil {
		return nil, nil, err
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, v); err != nil {
		return nil, nil, err
	}
	return m.Webhooks[0].ClientConfig.CABundle, v.Webhooks[0].ClientConfig.CABundle, nil
}

func leafSerial(t *testing.T, certPEM []byte) string {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatalf("no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert.SerialNumber.String()
}

// TestCertificateIssuedInjectedRenewed drives the real cert-manager through what scaleplane's
// cert-manager mode relies on: EnsureCertManager's objects become Ready, the
// CA injector fills caBundle of both webhook configurations, the Rotator
// mirrors the Secret into a cert dir, and a forced renewal brings a new key
// to that dir while caBundle keeps the same CA.
func TestCertificateIssuedInjectedRenewed(t *testing.T) {
	if testCfg == nil {
		t.Skip(skipReason)
	}
	c, err := client.New(testCfg, client.Options{Scheme: certs.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cm-"}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	webhookConfigs(t, c, ns.Name)
	o := certs.Options{
		Mode:                            certs.ModeCertManager,
		SecretNamespace:                 ns.Name,
		SecretName:                      "scaleplane-webhook-server-cert",
		DNSNames:                        certs.ServiceDNSNames("scaleplane-webhook-service", ns.Name),
		IPAddresses:                     []net.IP{net.ParseIP("127.0.0.1")},
		MutatingWebhookConfigurations:   []string{ns.Name},
		ValidatingWebhookConfigurations: []string{ns.Name},
		CertDir:                         t.TempDir(),
	}
	for i := range 2 { // the second call must find everything in place
		if err := certs.EnsureCertManager(t.Context(), c, o); err != nil {
			t.Fatalf("EnsureCertManager call %d: %v", i+1, err)
		}
	}
	if _, err := WaitReady(t.Context(), c, ns.Name, certs.ServingCertificateName, 1, timeout); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns.Name, Name: o.SecretName}, secret); err != nil {
		t.Fatal(err)
	}
	waitInjected := func(want []byte) {
		t.Helper()
		err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			m, v, err := injected(ctx, c, ns.Name)
			return err == nil && bytes.Equal(m, want) && bytes.Equal(v, want), err
		})
		if err != nil {
			t.Fatalf("CA injector did not fill caBundle of both configurations: %v", err)
		}
	}
	waitInjected(secret.Data[certs.CAKey])

	r, err := certs.New(testCfg, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("rotator stopped with: %v", err)
		}
	})
	readFile := func() []byte {
		b, _ := os.ReadFile(filepath.Join(o.CertDir, certs.CertKey))
		return b
	}
	mirrored := func(want []byte) {
		t.Helper()
		err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
			return bytes.Equal(readFile(), want) && r.ReadyCheck(nil) == nil, nil
		})
		if err != nil {
			t.Fatalf("Secret not mirrored into the cert dir: %v (ready: %v)", err, r.ReadyCheck(nil))
		}
	}
	mirrored(secret.Data[certs.CertKey])

	if err := Renew(t.Context(), c, ns.Name, certs.ServingCertificateName); err != nil {
		t.Fatal(err)
	}
	if _, err := WaitReady(t.Context(), c, ns.Name, certs.ServingCertificateName, 2, timeout); err != nil {
		t.Fatal(err)
	}
	renewed := &corev1.Secret{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns.Name, Name: o.SecretName}, renewed); err != nil {
		t.Fatal(err)
	}
	mirrored(renewed.Data[certs.CertKey])
	waitInjected(renewed.Data[certs.CAKey])

	type change struct {
		NewSerial, NewKey, SameCA bool
	}
	got := change{
		NewSerial: leafSerial(t, secret.Data[certs.CertKey]) != leafSerial(t, renewed.Data[certs.CertKey]),
		NewKey:    !bytes.Equal(secret.Data[certs.KeyKey], renewed.Data[certs.KeyKey]),
		SameCA:    bytes.Equal(secret.Data[certs.CAKey], renewed.Data[certs.CAKey]),
	}
	if diff := cmp.Diff(change{NewSerial: true, NewKey: true, SameCA: true}, got); diff != "" {
		t.Errorf("renewal (-want +got):\n%s", diff)
	}
}
