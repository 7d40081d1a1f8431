package certmanager

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/certs"
	"github.com/scaleplane/scaleplane/certs/certmanagertest"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
)

const (
	namespace      = "scaleplane-system"
	secretName     = "scaleplane-webhook-server-cert"
	mutatingName   = configv1alpha2.DefaultMutatingConfigurationName
	validatingName = configv1alpha2.DefaultValidatingConfigurationName

	// The admission loop during the renewal: a steady rate for a fixed time.
	admissionRate   = 20 // per second
	admissionPeriod = 30 * time.Second
)

// TestDeployWithCertManager is the cert-manager install end to end with scaleplane's own
// webhooks:
//
//  1. docs/certs.md "Deploy with cert-manager" runs as written (real
//     kubectl, config/certmanager as shipped, the documented overlay that
//     adds the IP SAN an API server calling by URL needs) and the real
//     cert-manager issues the serving certificate;
//  2. the binary's wiring (app.Run, --cert-mode=cert-manager) creates both
//     webhook configurations with a URL clientConfig, cert-manager's CA
//     injector fills caBundle in both, and the API server's creates come
//     back mutated over the cert-manager-issued chain;
//  3. a forced renewal (new key) while admissions flow at a steady rate
//     fails none of them, and the webhook server then presents the renewed
//     certificate without a restart.
func TestDeployWithCertManager(t *testing.T) {
	certManager(t)
	ctx := t.Context()
	c, err := client.New(cluster.Config, client.Options{Scheme: certs.NewScheme()})
	if err != nil {
		t.Fatalf("build client: %v", err)
	}

	// 1. The docs' commands, then the by-URL overlay as the docs write it.
	start := time.Now()
	skip := map[string]bool{}
	if err := c.Get(ctx, client.ObjectKey{Name: namespace}, &corev1.Namespace{}); err == nil {
		// An earlier -count iteration on this cluster created it.
		skip["kubectl create namespace "+namespace] = true
	}
	runDocCommands(t, ctx, "deploy-cert-manager", nil, skip)
	t.Logf("README step 2: Certificate Ready %s after `kubectl apply -k config/certmanager`", time.Since(start).Round(time.Millisecond))
	// Without the address the API server calls, scaleplane refuses to
	// start rather than serve a certificate every admission would reject.
	func() {
		defer deleteWebhookConfigurations()
		runCtx, cancel := context.WithTimeout(ctx, framework.DefaultTimeout)
		defer cancel()
		err := newApp(t, app.CertCertManager, freePort(t), freePort(t)).Run(runCtx)
		if err == nil || !strings.Contains(err.Error(), "lacks 127.0.0.1 in spec.ipAddresses") || !strings.Contains(err.Error(), "API server outside the cluster network") {
			t.Fatalf("app.Run with the shipped Certificate and a by-URL webhook: got %v, want an error naming the missing IP address and the docs section", err)
		}
		t.Logf("app.Run before the by-URL overlay: %v", err)
		if left := webhookConfigurationsLeft(t, cluster.Client); len(left) > 0 {
			t.Errorf("a failed start left webhook configurations that fail closed: %v", left)
		}
	}()
	overlay := writeOverlay(t, "by-url-overlay", "my-overlay", map[string]string{
		"../config/certmanager": filepath.Join(framework.RepoRoot(), "config", "certmanager"),
	})
	start = time.Now()
	runDocCommands(t, ctx, "by-url-apply", map[string]string{"my-overlay": overlay}, nil)
	t.Logf("README step 2 (by URL): Certificate reissued with the IP SAN and Ready %s after `kubectl apply -k my-overlay`", time.Since(start).Round(time.Millisecond))
	// The docs say kubectl wait waits for the reissue: no further wait here.
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: secretName}, secret); err != nil {
		t.Fatalf("get secret: %v", err)
	}
	if cert := parseCert(t, secret.Data[certs.CertKey]); !hasIP(cert, "127.0.0.1") {
		t.Fatalf("after the docs' kubectl wait the issued certificate has IP SANs %v, want 127.0.0.1", cert.IPAddresses)
	}
	crt := readyCertificate(t, c, 1)
	t.Logf("serving certificate revision %d issued by %s with IP SAN 127.0.0.1", *crt.Status.Revision, crt.Spec.IssuerRef.Name)

	// 2. scaleplane in cert-manager mode, serving on 127.0.0.1.
	appStarted := time.Now()
	port := startApp(t, app.CertCertManager)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	t.Logf("app ready (webhook server serving the mirrored Secret) %s after Run", time.Since(appStarted).Round(time.Millisecond))
	runDocCommands(t, ctx, "check-injection", nil, nil)
	ca := secret.Data[certs.CAKey]
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		return injected(ctx, c, ca)
	})
	t.Logf("caBundle = the Secret's ca.crt in every webhook of %s and %s %s after Run", mutatingName, validatingName, time.Since(appStarted).Round(time.Millisecond))
	for _, name := range []string{mutatingName, validatingName} {
		annotation := certs.InjectCAFromAnnotation
		var obj client.Object = &admissionregistrationv1.MutatingWebhookConfiguration{}
		if name == validatingName {
			obj = &admissionregistrationv1.ValidatingWebhookConfiguration{}
		}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
			t.Fatalf("get %s: %v", name, err)
		}
		if diff := cmp.Diff(namespace+"/"+certs.ServingCertificateName, obj.GetAnnotations()[annotation]); diff != "" {
			t.Errorf("%s annotation %s (-want +got):\n%s", name, annotation, diff)
		}
		// cert-manager's CA injector, not scaleplane, wrote caBundle: in
		// cert-manager mode the Rotator only mirrors the Secret.
		var writers []string
		for _, mf := range obj.GetManagedFields() {
			if mf.FieldsV1 != nil && bytes.Contains(mf.FieldsV1.GetRawBytes(), []byte(`"f:caBundle"`)) {
				writers = append(writers, mf.Manager)
			}
		}
		if len(writers) == 0 || contains(writers, ownFieldManager()) {
			t.Errorf("%s: caBundle written by %q; want only cert-manager's CA injector", name, writers)
		}
		t.Logf("%s: caBundle written by %q", name, writers)
	}

	ns := cluster.Namespace(t)
	var seq atomic.Int64
	admit := func(ctx context.Context) error {
		u := rackedCluster(ns, fmt.Sprintf("rc-%d", seq.Add(1)), 3, 1, 2, 4)
		if err := cluster.Client.Create(ctx, u, client.DryRunAll); err != nil {
			return err
		}
		return mutated(u, 3)
	}
	// The API server learns the injected caBundle through its informer.
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		if err := admit(ctx); err != nil {
			return false, fmt.Sprintf("dry-run create through the webhook: %v", err)
		}
		return true, ""
	})
	t.Logf("first create admitted and mutated %s after Run", time.Since(appStarted).Round(time.Millisecond))
	// The validating configuration is reached the same way: a replica count
	// above the sample profile's bound is refused by scaleplane with the
	// field, not by a failed call.
	err = cluster.Client.Create(ctx, rackedCluster(ns, "too-many", 1001, 1), client.DryRunAll)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "denied the request") || !strings.Contains(err.Error(), "spec.replicas") {
		t.Errorf("create with replicas 1001: got %v, want a 422 from scaleplane's validating webhook naming spec.replicas", err)
	}
	created := rackedCluster(ns, "persisted", 3, 1, 2, 4)
	if err := cluster.Client.Create(ctx, created); err != nil {
		t.Fatalf("create: %v", err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(rackedClusterGVK)
	if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(created), got); err != nil {
		t.Fatalf("get: %v", err)
	}
	if err := mutated(got, 3); err != nil {
		t.Errorf("stored object: %v", err)
	}

	before := presented(t, addr, ca)
	if !before.Equal(parseCert(t, secret.Data[certs.CertKey])) {
		t.Fatalf("webhook server presents serial %s, the Secret holds serial %s", before.SerialNumber, parseCert(t, secret.Data[certs.CertKey]).SerialNumber)
	}

	// 3. A forced renewal while admissions flow.
	var sent, failed atomic.Int64
	var errMu sync.Mutex
	var errs []string
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		var inflight sync.WaitGroup
		defer inflight.Wait()
		period := time.Second / admissionRate
		tick := time.NewTicker(period)
		defer tick.Stop()
		begin := time.Now()
		end := time.After(admissionPeriod)
		for {
			select {
			case <-end:
				return
			case <-tick.C:
			}
			// A ticker drops ticks its reader misses (a loaded machine):
			// send what is due by now, so the rate holds on average.
			due := int64(time.Since(begin)/period) + 1
			for sent.Load() < due {
				sent.Add(1)
				inflight.Go(func() {
					actx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					if err := admit(actx); err != nil {
						failed.Add(1)
						errMu.Lock()
						errs = append(errs, err.Error())
						errMu.Unlock()
					}
				})
			}
		}
	}()
	// Let the loop run before the renewal, so the measurement spans it.
	framework.Eventually(t, 0, func(context.Context) (bool, string) {
		return sent.Load() >= 3*admissionRate, fmt.Sprintf("%d admissions sent", sent.Load())
	})
	renewStart := time.Now()
	if err := certmanagertest.Renew(ctx, c, namespace, certs.ServingCertificateName); err != nil {
		t.Fatal(err)
	}
	renewed := readyCertificate(t, c, *crt.Status.Revision+1)
	renewedSecret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: secretName}, renewedSecret); err != nil {
		t.Fatalf("get renewed secret: %v", err)
	}
	newCert := parseCert(t, renewedSecret.Data[certs.CertKey])
	t.Logf("renewal: revision %d -> %d Ready %s after the trigger", *crt.Status.Revision, *renewed.Status.Revision, time.Since(renewStart).Round(time.Millisecond))
	var now *x509.Certificate
	framework.Eventually(t, 0, func(context.Context) (bool, string) {
		now = presented(t, addr, ca)
		return now.Equal(newCert), fmt.Sprintf("webhook server presents serial %s, the renewed Secret holds %s", now.SerialNumber, newCert.SerialNumber)
	})
	switched := time.Since(renewStart)
	sentAtSwitch := sent.Load()
	<-loopDone // the loop ends after admissionPeriod
	t.Logf("webhook server presented the renewed certificate %s after the trigger, without a restart", switched.Round(time.Millisecond))
	t.Logf("admissions during renewal: %d sent in %s (%.1f/s, target %d/s), %d failed; %d sent after the server switched certificates",
		sent.Load(), admissionPeriod, float64(sent.Load())/admissionPeriod.Seconds(), admissionRate, failed.Load(), sent.Load()-sentAtSwitch)

	if diff := cmp.Diff(int64(0), failed.Load()); diff != "" {
		errMu.Lock()
		t.Errorf("failed admissions out of %d, first %v (-want +got):\n%s", sent.Load(), errs[:min(len(errs), 5)], diff)
		errMu.Unlock()
	}
	if err := admit(ctx); err != nil {
		t.Errorf("admission after the renewal: %v", err)
	}
	if bytes.Equal(before.RawSubjectPublicKeyInfo, newCert.RawSubjectPublicKeyInfo) {
		t.Errorf("renewal kept the private key; rotationPolicy Always should give a new one")
	}
	if diff := cmp.Diff(newCert.SerialNumber.String(), now.SerialNumber.String()); diff != "" {
		t.Errorf("presented serial (-want +got):\n%s", diff)
	}
	if !bytes.Equal(newCert.RawSubjectPublicKeyInfo, now.RawSubjectPublicKeyInfo) {
		t.Errorf("presented public key differs from the renewed Secret's tls.crt")
	}
	if !bytes.Equal(ca, renewedSecret.Data[certs.CAKey]) {
		t.Errorf("the serving renewal changed ca.crt; it must keep caBundle")
	}
	if ok, msg := injected(ctx, c, ca); !ok {
		t.Errorf("after renewal: %s", msg)
	}
}

// TestCertManagerModeWithoutCRDs starts the binary's wiring in cert-manager
// mode against a control plane of its own that has no cert-manager CRDs: Run
// must stop with an error that says what to install.
func TestCertManagerModeWithoutCRDs(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	bare, err := framework.Start(ctx, framework.Options{})
	if err != nil {
		t.Fatalf("start a second control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := bare.Stop(); err != nil {
			t.Errorf("stop second control plane: %v", err)
		}
	})
	cfg := profile.SampleConfiguration()
	cfg.Webhook.Host = "127.0.0.1"
	cfg.Webhook.Port = freePort(t)
	cfg.Webhook.CertDir = filepath.Join(t.TempDir(), "certs")
	a, err := app.New(app.Options{
		Config:      cfg,
		RestConfig:  bare.Config,
		CertMode:    app.CertCertManager,
		WebhookURL:  "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Webhook.Port)),
		WebhookIPs:  []string{"127.0.0.1"},
		MetricsAddr: "0",
		ProbeAddr:   "0",
		// The package's other test runs the app in this process too.
		SkipControllerNameValidation: true,
	})
	if err != nil {
		t.Fatalf("build app: %v", err)
	}
	err = a.Run(ctx)
	if err == nil {
		t.Fatal("Run in cert-manager mode without cert-manager's CRDs returned no error")
	}
	if !errors.Is(err, certs.ErrCertManagerNotInstalled) {
		t.Errorf("Run error %q does not wrap certs.ErrCertManagerNotInstalled", err)
	}
	if left := webhookConfigurationsLeft(t, bare.Client); len(left) > 0 {
		t.Errorf("a start refused for want of cert-manager wrote webhook configurations: %v", left)
	}
	for _, want := range []string{
		"cert-manager is not installed",
		"Issuer, Certificate",
		"install cert-manager " + certs.CertManagerVersion,
		"https://github.com/cert-manager/cert-manager/releases/download/" + certs.CertManagerVersion + "/cert-manager.yaml",
		"--cert-mode=self-signed",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Run error does not say %q:\n%v", want, err)
		}
	}
	doc, rerr := os.ReadFile(filepath.Join(framework.RepoRoot(), "docs", "certs.md"))
	if rerr != nil {
		t.Fatal(rerr)
	}
	if printed := "scaleplane: " + err.Error(); !strings.Contains(string(doc), printed) {
		t.Errorf("docs/certs.md does not quote what the binary prints:\n%s", printed)
	}
	t.Logf("Run: %v", err)
}

// TestDeployOverlayFromDocs builds the overlay docs/certs.md step 3 gives
// for deploying scaleplane in cert-manager mode, with the real kubectl, and
// has the API server accept it (server-side dry run): the Deployment runs
// with --cert-mode=cert-manager and both webhook configurations carry the
// injection annotation.
func TestDeployOverlayFromDocs(t *testing.T) {
	configDir := filepath.Join(framework.RepoRoot(), "config")
	overlay := writeOverlay(t, "deploy-overlay", "cert-manager-deploy", map[string]string{
		"../default":               filepath.Join(configDir, "default"),
		"../certmanager/injection": filepath.Join(configDir, "certmanager", "injection"),
	})
	out, err := cluster.Kubectl(t.Context(), "kustomize", overlay)
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeAll(t, out)
	var args []string
	annotations := map[string]string{}
	for _, u := range objs {
		switch u.GetKind() {
		case "Deployment":
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			a, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
			args = a
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			annotations[u.GetKind()] = u.GetAnnotations()[certs.InjectCAFromAnnotation]
		}
	}
	if !contains(args, "--cert-mode=cert-manager") || contains(args, "--cert-mode=self-signed") {
		t.Errorf("Deployment args %q: want --cert-mode=cert-manager and no other mode", args)
	}
	want := map[string]string{
		"MutatingWebhookConfiguration":   namespace + "/" + certs.ServingCertificateName,
		"ValidatingWebhookConfiguration": namespace + "/" + certs.ServingCertificateName,
	}
	if diff := cmp.Diff(want, annotations); diff != "" {
		t.Errorf("inject-ca-from annotations (-want +got):\n%s", diff)
	}
	if out, err := cluster.Kubectl(t.Context(), "apply", "--dry-run=server", "-k", overlay); err != nil {
		t.Errorf("API server rejects the overlay: %v\n%s", err, out)
	}
}

// writeOverlay writes a kustomization from a docs block into a folder
// named dir under a temporary folder, replacing the documented relative
// paths (which are relative to where a user keeps the overlay) with the
// repository's.
func writeOverlay(t *testing.T, block, dir string, paths map[string]string) string {
	t.Helper()
	body := docBlock(t, block)
	overlay := filepath.Join(t.TempDir(), dir)
	for from, to := range paths {
		line := "- " + from + "\n"
		if !strings.Contains(body, line) {
			t.Fatalf("docs block %s no longer lists %q; update the test's path map", block, from)
		}
		// kustomize takes no absolute roots.
		rel, err := filepath.Rel(overlay, to)
		if err != nil {
			t.Fatal(err)
		}
		body = strings.ReplaceAll(body, line, "- "+rel+"\n")
	}
	if err := os.MkdirAll(overlay, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return overlay
}

// newApp builds the binary's wiring with its webhook server on 127.0.0.1 and
// webhook configurations that call it there by URL.
func newApp(t *testing.T, mode app.CertMode, port, probePort int) *app.App {
	t.Helper()
	cfg := profile.SampleConfiguration()
	cfg.Webhook.Host = "127.0.0.1"
	cfg.Webhook.Port = port
	cfg.Webhook.CertDir = filepath.Join(t.TempDir(), "certs")
	a, err := app.New(app.Options{
		Config:      cfg,
		RestConfig:  cluster.Config,
		CertMode:    mode,
		Namespace:   namespace,
		SecretName:  secretName,
		WebhookURL:  "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		WebhookIPs:  []string{"127.0.0.1"},
		MetricsAddr: "0",
		ProbeAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(probePort)),
		// The package's other tests run the app in this process too.
		SkipControllerNameValidation: true,
	})
	if err != nil {
		t.Fatalf("build app: %v", err)
	}
	return a
}

// deleteWebhookConfigurations removes the app's configurations: they call a
// process that is gone, with failurePolicy Fail, and carry its port.
func deleteWebhookConfigurations() {
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	m.SetName(mutatingName)
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	v.SetName(validatingName)
	_ = cluster.Client.Delete(context.Background(), m)
	_ = cluster.Client.Delete(context.Background(), v)
}

// startApp runs newApp's app until the test ends and waits until it is
// ready. It returns the webhook port.
func startApp(t *testing.T, mode app.CertMode) int {
	t.Helper()
	port, probePort := freePort(t), freePort(t)
	a := newApp(t, mode, port, probePort)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		deleteWebhookConfigurations()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("app stopped with: %v", err)
		}
	})
	waitReady(t, done, net.JoinHostPort("127.0.0.1", strconv.Itoa(probePort)))
	return port
}

// waitReady waits until the app whose Run returns into done answers
// /readyz at probeAddr with 200, failing early when it stops.
func waitReady(t *testing.T, done chan error, probeAddr string) {
	t.Helper()
	readyz := "http://" + probeAddr + "/readyz"
	framework.Eventually(t, 0, func(context.Context) (bool, string) {
		select {
		case err := <-done:
			done <- err
			return false, fmt.Sprintf("app stopped: %v", err)
		default:
		}
		resp, err := http.Get(readyz)
		if err != nil {
			return false, fmt.Sprintf("readyz: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Sprintf("readyz: %s", resp.Status)
	})
}

// readyCertificate waits until the serving Certificate is Ready for its
// current generation with at least minRevision issuances.
func readyCertificate(t *testing.T, c client.Client, minRevision int) *cmapi.Certificate {
	t.Helper()
	crt := &cmapi.Certificate{}
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: certs.ServingCertificateName}, crt); err != nil {
			return false, fmt.Sprintf("get certificate: %v", err)
		}
		if crt.Status.Revision == nil || *crt.Status.Revision < minRevision {
			return false, fmt.Sprintf("certificate revision %v, want at least %d", crt.Status.Revision, minRevision)
		}
		for _, cond := range crt.Status.Conditions {
			if cond.Type == cmapi.CertificateConditionReady {
				return cond.Status == cmmeta.ConditionTrue && cond.ObservedGeneration == crt.Generation,
					fmt.Sprintf("Ready %s for generation %d of %d: %s", cond.Status, cond.ObservedGeneration, crt.Generation, cond.Message)
			}
		}
		return false, fmt.Sprintf("no Ready condition: %+v", crt.Status.Conditions)
	})
	return crt
}

// injected reports whether every webhook of both of scaleplane's
// configurations has caBundle ca.
func injected(ctx context.Context, c client.Client, ca []byte) (bool, string) {
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: mutatingName}, m); err != nil {
		return false, fmt.Sprintf("get %s: %v", mutatingName, err)
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: validatingName}, v); err != nil {
		return false, fmt.Sprintf("get %s: %v", validatingName, err)
	}
	var bundles []admissionregistrationv1.WebhookClientConfig
	for _, w := range m.Webhooks {
		bundles = append(bundles, w.ClientConfig)
	}
	for _, w := range v.Webhooks {
		bundles = append(bundles, w.ClientConfig)
	}
	if len(bundles) == 0 {
		return false, "no webhooks in the configurations"
	}
	for _, cc := range bundles {
		if cc.URL == nil {
			return false, "a webhook has no URL clientConfig"
		}
		if !bytes.Equal(cc.CABundle, ca) {
			return false, fmt.Sprintf("webhook for %s has caBundle of %d bytes, not the Secret's ca.crt", *cc.URL, len(cc.CABundle))
		}
	}
	return true, ""
}

// presented dials the webhook server and returns the certificate it
// presents, verified against ca for the address 127.0.0.1.
func presented(t *testing.T, addr string, ca []byte) *x509.Certificate {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatalf("no CA certificate in ca.crt")
	}
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("TLS handshake with the webhook server: %v", err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

// ownFieldManager is the field manager client-go gives this process's
// writes: the executable's name.
func ownFieldManager() string {
	return filepath.Base(os.Args[0])
}

// webhookConfigurationsLeft lists scaleplane's webhook configurations that
// exist: after a failed start there must be none that it created.
func webhookConfigurationsLeft(t *testing.T, c client.Client) []string {
	t.Helper()
	var left []string
	ctx := context.Background()
	wc := profile.SampleConfiguration().Webhook
	for _, obj := range []client.Object{&admissionregistrationv1.MutatingWebhookConfiguration{}, &admissionregistrationv1.ValidatingWebhookConfiguration{}} {
		name := wc.MutatingConfigurationName
		if _, ok := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration); ok {
			name = wc.ValidatingConfigurationName
		}
		err := c.Get(ctx, client.ObjectKey{Name: name}, obj)
		switch {
		case err == nil:
			left = append(left, name)
		case !apierrors.IsNotFound(err):
			t.Fatalf("get %s: %v", name, err)
		}
	}
	return left
}
