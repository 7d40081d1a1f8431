package certmanagertest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/certs"
)

// overlayWebhooks stands in for the webhook configurations the product's
// overlay builds; the injection component must annotate them.
const overlayWebhooks = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: scaleplane-readme-mutating
webhooks:
- name: m.readme.test
  clientConfig: {url: "https://127.0.0.1:9/never"}
  rules: [{operations: [CREATE], apiGroups: [example.invalid], apiVersions: [v1], resources: [widgets]}]
  sideEffects: None
  admissionReviewVersions: [v1]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: scaleplane-readme-validating
webhooks:
- name: v.readme.test
  clientConfig: {url: "https://127.0.0.1:9/never"}
  rules: [{operations: [CREATE], apiGroups: [example.invalid], apiVersions: [v1], resources: [widgets]}]
  sideEffects: None
  admissionReviewVersions: [v1]
`

// TestDeployWithCertManagerREADME applies, with the real kubectl, what
// docs/certs.md "Deploy with cert-manager" deploys, on stand-in webhook
// configurations: CRDs from the module, config/certmanager, the injection
// component, `kubectl wait` for the Certificate, and caBundle filled by the
// CA injector. e2e/certmanager runs the docs' commands themselves, with
// scaleplane's own webhooks.
func TestDeployWithCertManagerREADME(t *testing.T) {
	if testCfg == nil {
		t.Skip(skipReason)
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	kubectlBin := filepath.Join(filepath.Dir(Binary()), "kubectl")
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		kubectlBin = filepath.Join(dir, "kubectl")
	}
	if _, err := os.Stat(kubectlBin); err != nil {
		t.Skipf("kubectl not found at %s: build it with `make tools`", kubectlBin)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(testCfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), kubectlBin, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	c, err := client.New(testCfg, client.Options{Scheme: certs.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	crds, err := CRDDir()
	if err != nil {
		t.Fatal(err)
	}
	overlay := t.TempDir()
	component, err := filepath.Rel(overlay, filepath.Join(root, "config", "certmanager", "injection"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"webhooks.yaml":      overlayWebhooks,
		"kustomization.yaml": "resources:\n- webhooks.yaml\ncomponents:\n- " + component + "\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(overlay, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	kubectl("apply", "-f", crds)
	if err := c.Get(t.Context(), client.ObjectKey{Name: "scaleplane-system"}, &corev1.Namespace{}); err != nil { // -count=N reuses the cluster
		kubectl("create", "namespace", "scaleplane-system")
	}
	kubectl("apply", "-k", "config/certmanager")
	kubectl("apply", "-k", overlay)
	kubectl("-n", "scaleplane-system", "wait", "certificate/scaleplane-serving-cert", "--for=condition=Ready", "--timeout=2m")

	secret := &corev1.Secret{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "scaleplane-system", Name: "scaleplane-webhook-server-cert"}, secret); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		m := &admissionregistrationv1.MutatingWebhookConfiguration{}
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := c.Get(ctx, client.ObjectKey{Name: "scaleplane-readme-mutating"}, m); err != nil {
			return false, err
		}
		if err := c.Get(ctx, client.ObjectKey{Name: "scaleplane-readme-validating"}, v); err != nil {
			return false, err
		}
		return bytes.Equal(m.Webhooks[0].ClientConfig.CABundle, secret.Data[certs.CAKey]) &&
			bytes.Equal(v.Webhooks[0].ClientConfig.CABundle, secret.Data[certs.CAKey]), nil
	})
	if err != nil {
		t.Fatalf("caBundle not injected from the kustomize deployment: %v", err)
	}
	t.Log(kubectl("get", "mutatingwebhookconfigurations,validatingwebhookconfigurations",
		"-o", `custom-columns=NAME:.metadata.name,INJECT:.metadata.annotations.cert-manager\.io/inject-ca-from`))
}
