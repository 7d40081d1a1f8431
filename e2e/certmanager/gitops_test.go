package certmanager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"

	"github.com/scaleplane/scaleplane/certs"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
)

// writeRecorder records the writes (every method but GET) a process sends
// to the API server, by method and path.
type writeRecorder struct {
	mu     sync.Mutex
	writes []string
}

func (w *writeRecorder) config() *rest.Config {
	cfg := rest.CopyConfig(cluster.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if r.Method != http.MethodGet {
				w.mu.Lock()
				w.writes = append(w.writes, r.Method+" "+r.URL.Path)
				w.mu.Unlock()
			}
			return rt.RoundTrip(r)
		})
	})
	return cfg
}

// matching returns the recorded writes whose path contains one of parts.
func (w *writeRecorder) matching(parts ...string) (match, all []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wr := range w.writes {
		for _, p := range parts {
			if strings.Contains(wr, p) {
				match = append(match, wr)
				break
			}
		}
	}
	return match, append([]string(nil), w.writes...)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestGitOpsModeWritesNothingItRenders: with --gitops the
// webhook configurations and the cert-manager objects are the user's
// repository's.
//
//  1. A start outside GitOps mode (cert-manager mode) writes both
//     configurations and the four cert-manager objects; what `scaleplane
//     render webhooks` and `render certificates` print for the same
//     options is what that start left (caBundle aside, which cert-manager's
//     CA injector owns).
//  2. With everything deleted and the rendered manifests applied with
//     kubectl, a start with --gitops admits through them (the real
//     cert-manager issued the key pair, its injector the CA), and sends the
//     API server no write to a webhook configuration, a cert-manager object
//     or a namespace; `kubectl diff --server-side` of the rendered
//     manifests then finds no drift, which is what Argo CD and Flux check.
func TestGitOpsModeWritesNothingItRenders(t *testing.T) {
	certManager(t)
	ctx := t.Context()
	const ns = "scaleplane-gitops-e2e"
	cfg := profile.SampleConfiguration()
	// Its own owner: the package's other tests use the binary's names.
	cfg.Webhook.Owner = "gitops-e2e"
	cfg.Webhook.MutatingConfigurationName = ""
	cfg.Webhook.ValidatingConfigurationName = ""
	cfg.Default()
	cfg.Webhook.Host = "127.0.0.1"
	port := freePort(t)
	cfg.Webhook.Port = port
	options := func(gitOps bool, rc *rest.Config) app.Options {
		c := *cfg
		c.Webhook.CertDir = filepath.Join(t.TempDir(), "certs")
		return app.Options{
			Config:      &c,
			RestConfig:  rc,
			CertMode:    app.CertCertManager,
			GitOps:      gitOps,
			Namespace:   ns,
			WebhookURL:  "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			WebhookIPs:  []string{"127.0.0.1"},
			MetricsAddr: "0",
			ProbeAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t))),
			// The package's other tests run the app in this process too.
			SkipControllerNameValidation: true,
		}
	}
	c, err := client.New(cluster.Config, client.Options{Scheme: certs.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	views, err := profile.CompileAll(cfg.Profiles)
	if err != nil {
		t.Fatal(err)
	}
	rendered := app.RenderWebhookConfigurations(options(true, nil), views)
	certObjs, err := app.RenderCertificates(options(true, nil))
	if err != nil {
		t.Fatal(err)
	}
	cleanup := func() {
		for _, obj := range append(append([]client.Object(nil), rendered...), certObjs...) {
			_ = c.Delete(context.Background(), obj.DeepCopyObject().(client.Object))
		}
		// Without kube-controller-manager's garbage collector the
		// CertificateRequests outlive their Certificates, and a new
		// Certificate's first request would find the old one's name taken.
		_ = c.DeleteAllOf(context.Background(), &cmapi.CertificateRequest{}, client.InNamespace(ns))
		_ = c.DeleteAllOf(context.Background(), &corev1.Secret{}, client.InNamespace(ns))
	}
	t.Cleanup(cleanup)

	// 1. Outside GitOps mode.
	stop := runApp(t, options(false, cluster.Config))
	for _, want := range rendered {
		live := want.DeepCopyObject().(client.Object)
		if err := c.Get(ctx, client.ObjectKeyFromObject(want), live); err != nil {
			t.Fatalf("the start outside GitOps mode left no %T %s: %v", want, want.GetName(), err)
		}
		for _, ann := range []string{certs.InjectCAFromAnnotation} {
			if got := live.GetAnnotations()[ann]; got != want.GetAnnotations()[ann] {
				t.Errorf("%s: annotation %s is %q in the cluster, %q rendered", want.GetName(), ann, got, want.GetAnnotations()[ann])
			}
		}
		if diff := cmp.Diff(want.GetLabels(), live.GetLabels()); diff != "" {
			t.Errorf("%s: labels (-rendered +cluster):\n%s", want.GetName(), diff)
		}
		if diff := cmp.Diff(entries(want), entries(live)); diff != "" {
			t.Errorf("%s: entries (-rendered +cluster, caBundle left out):\n%s", want.GetName(), diff)
		}
	}
	for _, want := range certObjs {
		live := want.DeepCopyObject().(client.Object)
		if err := c.Get(ctx, client.ObjectKeyFromObject(want), live); err != nil {
			t.Fatalf("the start outside GitOps mode left no %T %s: %v", want, want.GetName(), err)
		}
		if diff := cmp.Diff(spec(t, want), spec(t, live)); diff != "" {
			t.Errorf("%s %s: spec (-rendered +cluster):\n%s", want.GetObjectKind().GroupVersionKind().Kind, want.GetName(), diff)
		}
	}
	stop()
	t.Logf("render webhooks and render certificates equal what a start outside GitOps mode wrote: %d configurations, %d cert-manager objects", len(rendered), len(certObjs))

	// 2. The repository's manifests, then scaleplane --gitops.
	cleanup()
	manifests := renderedYAML(t, append(append([]client.Object(nil), certObjs...), rendered...))
	file := filepath.Join(t.TempDir(), "scaleplane-gitops.yaml")
	if err := os.WriteFile(file, []byte(manifests), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := cluster.Kubectl(ctx, "create", "namespace", ns); err != nil && !strings.Contains(out+err.Error(), "AlreadyExists") {
		t.Fatalf("kubectl create namespace: %v\n%s", err, out)
	}
	if out, err := cluster.Kubectl(ctx, "apply", "--server-side", "-f", file); err != nil {
		t.Fatalf("kubectl apply the rendered manifests: %v\n%s", err, out)
	}
	if out, err := cluster.Kubectl(ctx, "wait", "-n", ns, "--for=condition=Ready", "certificate/"+certs.ServingCertificateName, "--timeout=90s"); err != nil {
		t.Fatalf("kubectl wait for the serving Certificate: %v\n%s", err, out)
	}
	var rec writeRecorder
	runApp(t, options(true, rec.config()))
	wns := cluster.Namespace(t)
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		u := rackedCluster(wns, "gitops", 3, 1, 2, 4)
		if err := cluster.Client.Create(ctx, u, client.DryRunAll); err != nil {
			return false, fmt.Sprintf("dry-run create through the rendered configurations: %v", err)
		}
		return mutated(u, 3) == nil, fmt.Sprint(mutated(u, 3))
	})
	err = cluster.Client.Create(ctx, rackedCluster(wns, "too-many", 1001, 1), client.DryRunAll)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.replicas") {
		t.Errorf("create with replicas 1001 through the rendered validating configuration: got %v, want a 422 naming spec.replicas", err)
	}
	forbidden, all := rec.matching("/apis/admissionregistration.k8s.io/", "/apis/cert-manager.io/", "/api/v1/namespaces/"+ns+"/secrets")
	if len(forbidden) > 0 {
		t.Errorf("scaleplane --gitops wrote what the repository owns: %q", forbidden)
	}
	for _, w := range all {
		if strings.HasPrefix(w, "POST /api/v1/namespaces") && strings.Count(w, "/") == 3 {
			t.Errorf("scaleplane --gitops created a namespace: %s", w)
		}
	}
	t.Logf("scaleplane --gitops admitted through the rendered configurations; its %d writes went to: %s", len(all), writeKinds(all))
	// What Argo CD's and Flux's drift detection does: a server-side diff
	// of the repository's manifests against the cluster.
	diff := exec.CommandContext(ctx, framework.Binary("kubectl"), "--kubeconfig", cluster.Kubeconfig, "diff", "--server-side", "-f", file)
	out, err := diff.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		t.Logf("kubectl diff --server-side of the rendered manifests: no drift")
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		t.Errorf("kubectl diff --server-side found drift after scaleplane --gitops ran:\n%s", out)
	default:
		t.Fatalf("kubectl diff: %v\n%s", err, out)
	}
}

// runApp runs the binary's wiring with opts until the test ends or stop is
// called, and waits until it is ready.
func runApp(t *testing.T, opts app.Options) (stop func()) {
	t.Helper()
	a, err := app.New(opts)
	if err != nil {
		t.Fatalf("build app: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("app stopped with: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	waitReady(t, done, opts.ProbeAddr)
	return stop
}

// entries are a configuration's webhook entries without caBundle.
func entries(obj client.Object) any {
	switch o := obj.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		out := append([]admissionregistrationv1.MutatingWebhook(nil), o.DeepCopy().Webhooks...)
		for i := range out {
			out[i].ClientConfig.CABundle = nil
		}
		return out
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		out := append([]admissionregistrationv1.ValidatingWebhook(nil), o.DeepCopy().Webhooks...)
		for i := range out {
			out[i].ClientConfig.CABundle = nil
		}
		return out
	}
	return nil
}

// spec is a cert-manager object's spec.
func spec(t *testing.T, obj client.Object) any {
	t.Helper()
	switch o := obj.(type) {
	case *cmapi.Issuer:
		return o.Spec
	case *cmapi.Certificate:
		return o.Spec
	}
	t.Fatalf("unexpected %T", obj)
	return nil
}

// renderedYAML is objs as one YAML stream, as scaleplane render prints it.
func renderedYAML(t *testing.T, objs []client.Object) string {
	t.Helper()
	var b strings.Builder
	for _, obj := range objs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u, "status")
		out, err := yaml.Marshal(u)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(out)
	}
	return b.String()
}

// writeKinds summarizes writes by method and resource: "PUT leases 3,
// POST events 2".
func writeKinds(writes []string) string {
	counts := map[string]int{}
	var order []string
	for _, w := range writes {
		method, path, _ := strings.Cut(w, " ")
		parts := strings.Split(strings.Trim(path, "/"), "/")
		res := path
		switch {
		case slices.Index(parts, "namespaces") >= 0 && slices.Index(parts, "namespaces")+2 < len(parts):
			res = parts[slices.Index(parts, "namespaces")+2]
		case parts[0] == "api" && len(parts) > 2:
			res = parts[2]
		case parts[0] == "apis" && len(parts) > 3:
			res = parts[3]
		}
		key := method + " " + res
		if counts[key] == 0 {
			order = append(order, key)
		}
		counts[key]++
	}
	var out []string
	for _, k := range order {
		out = append(out, fmt.Sprintf("%s %d", k, counts[k]))
	}
	return strings.Join(out, ", ")
}
