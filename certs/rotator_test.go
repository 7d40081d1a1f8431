package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const waitTimeout = 45 * time.Second

func newTestClient(t *testing.T, cfg *rest.Config) client.WithWatch {
	t.Helper()
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: NewScheme()})
	if err != nil {
		t.Fatalf("create client: %v", err)
	}
	return c
}

func makeNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "certs-"}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

// makeWebhookConfigs creates a mutating and a validating configuration named
// name, each with two webhooks whose rules match nothing real, so the API
// server never calls them.
func makeWebhookConfigs(t *testing.T, c client.Client, name string) {
	t.Helper()
	none := admissionregistrationv1.SideEffectClassNone
	ignore := admissionregistrationv1.Ignore
	url := "https://127.0.0.1:9/never"
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"example.invalid"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}},
	}}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, hook := range []string{"a.certs.test", "b.certs.test"} {
		cc := admissionregistrationv1.WebhookClientConfig{URL: &url}
		mutating.Webhooks = append(mutating.Webhooks, admissionregistrationv1.MutatingWebhook{
			Name: hook, ClientConfig: cc, Rules: rules, SideEffects: &none, FailurePolicy: &ignore, AdmissionReviewVersions: []string{"v1"},
		})
		validating.Webhooks = append(validating.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name: hook, ClientConfig: cc, Rules: rules, SideEffects: &none, FailurePolicy: &ignore, AdmissionReviewVersions: []string{"v1"},
		})
	}
	for _, obj := range []client.Object{mutating, validating} {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatalf("create webhook configuration: %v", err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), obj) })
	}
}

// caBundles returns the caBundle of every webhook of both configurations.
func caBundles(ctx context.Context, c client.Client, name string) ([][]byte, error) {
	var out [][]byte
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, m); err != nil {
		return nil, err
	}
	for _, w := range m.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, v); err != nil {
		return nil, err
	}
	for _, w := range v.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out, nil
}

func testOptions(ns, name, dir string) Options {
	return Options{
		SecretNamespace:                 ns,
		SecretName:                      "webhook-server-cert",
		DNSNames:                        []string{"webhook." + ns + ".svc"},
		IPAddresses:                     []net.IP{net.ParseIP("127.0.0.1")},
		MutatingWebhookConfigurations:   []string{name},
		ValidatingWebhookConfigurations: []string{name},
		CertDir:                         dir,
	}
}

func startRotator(t *testing.T, cfg *rest.Config, o Options) *Rotator {
	t.Helper()
	r, err := New(cfg, o)
	if err != nil {
		t.Fatalf("new rotator: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("rotator: %v", err)
		}
	})
	return r
}

func waitReady(t *testing.T, r *Rotator) {
	t.Helper()
	select {
	case <-r.Ready():
	case <-time.After(waitTimeout):
		t.Fatalf("rotator not ready within %s: %v", waitTimeout, r.ReadyCheck(nil))
	}
}

func waitFor(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, waitTimeout, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func getSecret(ctx context.Context, c client.Client, o Options) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	return s, c.Get(ctx, client.ObjectKey{Namespace: o.SecretNamespace, Name: o.SecretName}, s)
}

// consistent reports whether caBundles and the files of every dir hold
// exactly the Secret's content.
func consistent(ctx context.Context, c client.Client, o Options, dirs ...string) (bool, error) {
	s, err := getSecret(ctx, c, o)
	if err != nil {
		return false, err
	}
	bundles, err := caBundles(ctx, c, o.ValidatingWebhookConfigurations[0])
	if err != nil {
		return false, err
	}
	for _, b := range bundles {
		if !bytes.Equal(b, s.Data[CAKey]) {
			return false, nil
		}
	}
	for _, dir := range dirs {
		for file, key := range map[string]string{CertKey: CertKey, KeyKey: KeyKey, CAKey: CAKey} {
			got, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil || !bytes.Equal(got, s.Data[key]) {
				return false, nil
			}
		}
	}
	return true, nil
}

func TestRotatorCreatesAndInjects(t *testing.T) {
	cfg := needCluster(t)
	c := newTestClient(t, cfg)
	ns := makeNamespace(t, c)
	makeWebhookConfigs(t, c, ns)
	o := testOptions(ns, ns, t.TempDir())

	r, err := New(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.ReadyCheck(nil); err == nil {
		t.Errorf("ReadyCheck before start: want error, got none")
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	if err := r.Bootstrap(ctx); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	if err := r.ReadyCheck(nil); err != nil {
		t.Errorf("ReadyCheck after bootstrap: %v", err)
	}

	ok, err := consistent(t.Context(), c, o, o.CertDir)
	if err != nil || !ok {
		t.Fatalf("secret, caBundles and files not consistent after bootstrap (err %v)", err)
	}
	s, err := getSecret(t.Context(), c, o)
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseMaterial(s.Data, "")
	if err != nil {
		t.Fatalf("secret content: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.Data[CAKey])
	for _, name := range []string{o.DNSNames[0], "127.0.0.1"} {
		if _, err := m.serving.cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: name}); err != nil {
			t.Errorf("serving certificate for %s does not verify against the injected bundle: %v", name, err)
		}
	}
	type summary struct {
		Type     corev1.SecretType
		Revision string
	}
	if diff := cmp.Diff(summary{Type: corev1.SecretTypeTLS, Revision: "1"}, summary{Type: s.Type, Revision: s.Annotations[RevisionAnnotation]}); diff != "" {
		t.Errorf("secret (-want +got):\n%s", diff)
	}
}

// TestRotatorInjectsLateConfiguration covers `scaleplane dev` and kustomize
// ordering: a webhook configuration created after the Secret is injected as
// soon as it appears.
func TestRotatorInjectsLateConfiguration(t *testing.T) {
	cfg := needCluster(t)
	c := newTestClient(t, cfg)
	ns := makeNamespace(t, c)
	o := testOptions(ns, ns, t.TempDir())
	r := startRotator(t, cfg, o)
	waitReady(t, r)
	makeWebhookConfigs(t, c, ns)
	waitFor(t, "late configurations injected", func(ctx context.Context) (bool, error) {
		return consistent(ctx, c, o, o.CertDir)
	})
}

// handshakeLoop dials addr at a steady rate, trusting whatever caBundle the
// validating configuration holds at that moment, as the API server does.
type handshakeLoop struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	lastErr    error
	presented  []byte
}

func (h *handshakeLoop) run(ctx context.Context, c client.Client, cfgName, addr string) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := c.Get(ctx, client.ObjectKey{Name: cfgName}, v); err != nil {
			continue // the API read is not what is under test
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(v.Webhooks[0].ClientConfig.CABundle)
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
		h.mu.Lock()
		if err != nil {
			if ctx.Err() == nil {
				h.failed.Add(1)
				h.lastErr = err
			}
		} else {
			h.ok.Add(1)
			h.presented = conn.ConnectionState().PeerCertificates[0].Raw
			_ = conn.Close()
		}
		h.mu.Unlock()
	}
}

func (h *handshakeLoop) lastPresented() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.presented
}

// serveTLS serves TLS on 127.0.0.1 with the key pair in dir, reloaded by
// controller-runtime's certwatcher exactly as the webhook server does.
func serveTLS(t *testing.T, dir string) string {
	t.Helper()
	cw, err := certwatcher.New(filepath.Join(dir, CertKey), filepath.Join(dir, KeyKey))
	if err != nil {
		t.Fatalf("certwatcher: %v", err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{GetCertificate: cw.GetCertificate, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = cw.Start(ctx) })
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				_ = conn.(*tls.Conn).HandshakeContext(ctx)
				_ = conn.Close()
			}()
		}
	})
	t.Cleanup(func() { cancel(); _ = ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// TestRotationWithoutFailedHandshakes is the short form of the e2e renewal
// test: while a client handshakes continuously, the Rotator renews (the
// serving certificate alone, or the CA too), the server presents the new
// certificate without a restart, and no handshake fails.
func TestRotationWithoutFailedHandshakes(t *testing.T) {
	cfg := needCluster(t)
	c := newTestClient(t, cfg)
	tests := []struct {
		name    string
		timing  func(*Options)
		rotated func(first, now material) bool
	}{
		{
			name: "serving renewal keeps the CA",
			timing: func(o *Options) {
				o.ServingValidity, o.RenewBefore = 4*time.Second, 2*time.Second
				o.CAPropagationDelay = time.Second
			},
			rotated: func(first, now material) bool {
				return first.serving.cert.SerialNumber.Cmp(now.serving.cert.SerialNumber) != 0 && first.ca.cert.Equal(now.ca.cert)
			},
		},
		{
			name: "CA rotation stages the new CA before using it",
			timing: func(o *Options) {
				o.CAValidity, o.CARenewBefore = 8*time.Second, 5*time.Second
				o.RenewBefore, o.CAPropagationDelay = 2*time.Second, time.Second
			},
			rotated: func(first, now material) bool {
				return !first.ca.cert.Equal(now.ca.cert) && now.serving.cert.CheckSignatureFrom(now.ca.cert) == nil
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := makeNamespace(t, c)
			makeWebhookConfigs(t, c, ns)
			o := testOptions(ns, ns, t.TempDir())
			tt.timing(&o)
			r := startRotator(t, cfg, o)
			waitReady(t, r)
			s, err := getSecret(t.Context(), c, o)
			if err != nil {
				t.Fatal(err)
			}
			first, err := parseMaterial(s.Data, "")
			if err != nil {
				t.Fatal(err)
			}

			addr := serveTLS(t, o.CertDir)
			var loop handshakeLoop
			ctx, cancel := context.WithCancel(t.Context())
			var wg sync.WaitGroup
			wg.Go(func() { loop.run(ctx, c, ns, addr) })

			waitFor(t, "rotation presented by the server", func(ctx context.Context) (bool, error) {
				s, err := getSecret(ctx, c, o)
				if err != nil {
					return false, err
				}
				now, err := parseMaterial(s.Data, "")
				if err != nil || !tt.rotated(first, now) {
					return false, nil
				}
				return bytes.Equal(loop.lastPresented(), now.serving.cert.Raw), nil
			})
			cancel()
			wg.Wait()

			loop.mu.Lock()
			lastErr := loop.lastErr
			loop.mu.Unlock()
			if diff := cmp.Diff(int64(0), loop.failed.Load()); diff != "" {
				t.Errorf("failed handshakes out of %d (last error %v) (-want +got):\n%s", loop.ok.Load()+loop.failed.Load(), lastErr, diff)
			}
			if loop.ok.Load() == 0 {
				t.Errorf("no successful handshake")
			}
			t.Logf("%d handshakes, all verified against the caBundle of the moment", loop.ok.Load())
		})
	}
}

// TestTwoRotatorsConverge runs two replicas against one Secret with frequent
// renewals: they race on every write, and must still end with both cert dirs
// and every caBundle holding the one Secret's content.
func TestTwoRotatorsConverge(t *testing.T) {
	cfg := needCluster(t)
	c := newTestClient(t, cfg)
	ns := makeNamespace(t, c)
	makeWebhookConfigs(t, c, ns)
	a := testOptions(ns, ns, t.TempDir())
	a.ServingValidity, a.RenewBefore, a.CAPropagationDelay = 3*time.Second, 2*time.Second, time.Second
	b := a
	b.CertDir = t.TempDir()

	ra := startRotator(t, cfg, a)
	rb := startRotator(t, cfg, b)
	waitReady(t, ra)
	waitReady(t, rb)

	waitFor(t, "several renewals and a consistent state", func(ctx context.Context) (bool, error) {
		s, err := getSecret(ctx, c, a)
		if err != nil {
			return false, err
		}
		if rev := s.Annotations[RevisionAnnotation]; rev == "1" || rev == "2" {
			return false, nil
		}
		return consistent(ctx, c, a, a.CertDir, b.CertDir)
	})
}

// TestCertManagerModeMirrorsSecret: in cert-manager mode the Rotator never
// writes the Secret; it waits for it, then mirrors it into CertDir.
func TestCertManagerModeMirrorsSecret(t *testing.T) {
	cfg := needCluster(t)
	c := newTestClient(t, cfg)
	ns := makeNamespace(t, c)
	o := testOptions(ns, ns, t.TempDir())
	o.Mode = ModeCertManager
	r := startRotator(t, cfg, o)

	// This cluster has no cert-manager CRDs: readiness says so.
	waitFor(t, "readiness saying what is missing", func(context.Context) (bool, error) {
		return errors.Is(r.ReadyCheck(nil), ErrCertManagerNotInstalled), nil
	})
	issued := generated(t, time.Now(), planOptions())
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: o.SecretName},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{CertKey: issued.serving.certPEM, KeyKey: issued.serving.keyPEM, CAKey: encodeBundle(issued.bundle)},
	}
	if err := c.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	waitReady(t, r)
	got, err := os.ReadFile(filepath.Join(o.CertDir, CertKey))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(issued.serving.certPEM), string(got)); diff != "" {
		t.Errorf("mirrored certificate (-want +got):\n%s", diff)
	}
}

func TestCheckCertManagerWithoutCRDs(t *testing.T) {
	cfg := needCluster(t)
	c := newTestClient(t, cfg)
	err := EnsureCertManager(t.Context(), c, Options{Mode: ModeCertManager, SecretNamespace: "default", SecretName: "s", DNSNames: []string{"a"}})
	type result struct {
		NotInstalled bool
		SaysWhatToDo bool
	}
	got := result{
		NotInstalled: errors.Is(err, ErrCertManagerNotInstalled),
		SaysWhatToDo: err != nil && strings.Contains(err.Error(), "--cert-mode=self-signed") && strings.Contains(err.Error(), "Certificate"),
	}
	if diff := cmp.Diff(result{NotInstalled: true, SaysWhatToDo: true}, got); diff != "" {
		t.Errorf("EnsureCertManager error %q (-want +got):\n%s", fmt.Sprint(err), diff)
	}
}
