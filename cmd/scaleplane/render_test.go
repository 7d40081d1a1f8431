package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
)

// TestRenderGolden: `scaleplane render` prints what a start
// outside GitOps mode writes (e2e/certmanager proves the equality against
// a real start), as manifests that decode strictly into their types, and
// refuses what GitOps mode cannot run with a message that says what to
// change. Regenerate the golden files with UPDATE_GOLDEN=1.
func TestRenderGolden(t *testing.T) {
	deploy := filepath.Join("..", "..", "config", "samples", "deploy", "scaleplane-config.yaml")
	fnProfile := filepath.Join("testdata", "profileinit", "function.golden")
	broken := filepath.Join("testdata", "render", "broken-profile.yaml")
	withPolicies := filepath.Join("testdata", "render", "policies-config.yaml")
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"webhooks", []string{"webhooks", "--config", deploy, "-f", fnProfile}, 0},
		{"webhooks-policies", []string{"webhooks", "--config", withPolicies}, 0},
		{"webhooks-files-by-url", []string{"webhooks", "--config", deploy, "--cert-mode", "files", "--webhook-url", "https://127.0.0.1:9443"}, 0},
		{"webhooks-invalid-profile", []string{"webhooks", "--config", deploy, "-f", broken}, 1},
		{"webhooks-twice", []string{"webhooks", "--config", deploy, "-f", fnProfile, "-f", fnProfile}, 1},
		{"webhooks-no-config", []string{"webhooks"}, 2},
		{"webhooks-self-signed", []string{"webhooks", "--config", deploy, "--cert-mode", "self-signed"}, 2},
		{"certificates", []string{"certificates", "--namespace", "platform", "--webhook-url", "https://127.0.0.1:9443"}, 0},
		{"certificates-files", []string{"certificates", "--cert-mode", "files"}, 2},
		{"no-subcommand", []string{"secrets"}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := render(tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tc.code, stdout.String(), stderr.String())
			}
			if code == 0 {
				checkManifests(t, stdout.String())
			} else if stdout.Len() > 0 {
				t.Errorf("a refused render printed to stdout:\n%s", stdout.String())
			}
			got := fmt.Sprintf("# exit %d\n# stdout:\n%s# stderr:\n%s", code, stdout.String(), stderr.String())
			if code == 2 && tc.name == "no-subcommand" {
				got = fmt.Sprintf("# exit %d\n", code)
			}
			checkGolden(t, filepath.Join("testdata", "render", tc.name+".golden"), got, fmt.Sprintf("render %q", tc.args))
		})
	}
}

// checkManifests decodes every document strictly into its type: a field
// the API server would not know fails here before it fails a GitOps sync.
// It returns how many documents of each kind the stream holds.
func checkManifests(t *testing.T, stream string) map[string]int {
	t.Helper()
	kinds := map[string]int{}
	for i, doc := range strings.Split(stream, "\n---\n") {
		var tm struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		var obj any
		switch tm.Kind {
		case "MutatingWebhookConfiguration":
			obj = &admissionregistrationv1.MutatingWebhookConfiguration{}
		case "ValidatingWebhookConfiguration":
			obj = &admissionregistrationv1.ValidatingWebhookConfiguration{}
		case "MutatingAdmissionPolicy":
			obj = &admissionregistrationv1.MutatingAdmissionPolicy{}
		case "MutatingAdmissionPolicyBinding":
			obj = &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
		case "ValidatingAdmissionPolicy":
			obj = &admissionregistrationv1.ValidatingAdmissionPolicy{}
		case "ValidatingAdmissionPolicyBinding":
			obj = &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		case "Issuer":
			obj = &cmapi.Issuer{}
		case "Certificate":
			obj = &cmapi.Certificate{}
		default:
			t.Fatalf("document %d has kind %q", i, tm.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Errorf("document %d (%s) does not decode strictly: %v", i, tm.Kind, err)
		}
		kinds[tm.Kind]++
	}
	return kinds
}
