package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Hostile inputs to the offline commands (render, config check, profile
// init): what a CI job or a copy-pasted command line can hand them. Each is
// refused with what to change, and nothing is printed to standard output
// that `| kubectl apply -f -` would act on.

// TestRenderRefusesHostileFlags: names that would end in the manifests
// (a namespace with a path in it, a Service or Secret name the API server
// refuses) and a webhook URL on a port no server can listen on.
func TestRenderRefusesHostileFlags(t *testing.T) {
	deploy := filepath.Join("..", "..", "config", "samples", "deploy", "scaleplane-config.yaml")
	cases := []struct {
		name string
		args []string
		says string
	}{
		{"namespace with a path", []string{"certificates", "--namespace", "Bad_NS/../x"}, `--namespace="Bad_NS/../x": a lowercase RFC 1123 label`},
		{"namespace with a newline", []string{"webhooks", "--config", deploy, "--namespace", "ns\n---\nkind: ClusterRoleBinding"}, "--namespace="},
		{"namespace too long", []string{"certificates", "--namespace", strings.Repeat("n", 64)}, "must be no more than 63 characters"},
		{"service with a dot", []string{"webhooks", "--config", deploy, "--webhook-service", "svc.evil"}, "--webhook-service="},
		{"secret with a slash", []string{"certificates", "--webhook-secret", "a/b"}, "--webhook-secret="},
		{"webhook URL on port 99999", []string{"webhooks", "--config", deploy, "--webhook-url", "https://h:99999"}, "port 99999 is not between 1 and 65535"},
		{"webhook URL without host", []string{"certificates", "--webhook-url", "https://:9443"}, "write it as https://HOST:PORT"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := render(tc.args, &stdout, &stderr); code != 2 {
				t.Errorf("exit %d, want 2\n%s", code, stderr.String())
			}
			if stdout.Len() > 0 {
				t.Errorf("printed manifests for a refused command line:\n%s", stdout.String())
			}
			if !strings.Contains(stderr.String(), tc.says) {
				t.Errorf("stderr %q does not say %q", stderr.String(), tc.says)
			}
		})
	}
}

// goodProfile is a ScaleProfile that passes config check and render.
const goodProfile = `apiVersion: scaleplane.io/v1alpha1
kind: ScaleProfile
metadata:
  name: scaledapps.apps.example.org
spec:
  target: {apiVersion: apps.example.org/v1, kind: ScaledApp, resource: scaledapps}
  scaleConfig: {path: .spec.scalePolicy}
`

// minimalConfiguration is a component configuration without profiles.
const minimalConfiguration = `apiVersion: config.scaleplane.io/v1alpha2
kind: Configuration
profiles: []
`

// TestConfigCheckHostileProfileFiles: files that the API server's strict
// field validation would refuse, or that hide a document, make config
// check and render fail (exit 1, nothing printed by render), each problem
// naming its document and field; none reads as "0 profile(s) OK".
func TestConfigCheckHostileProfileFiles(t *testing.T) {
	deploy := filepath.Join("..", "..", "config", "samples", "deploy", "scaleplane-config.yaml")
	cases := []struct {
		name, content, says string
	}{
		{"configuration, then an invalid ScaleProfile", minimalConfiguration + "---\n" + strings.Replace(goodProfile, ".spec.scalePolicy", ".status.scalePolicy", 1), "spec.scaleConfig.path"},
		{"configuration, then a ScaleProfile with an unknown field", minimalConfiguration + "---\n" + goodProfile + "  bogus: 1\n", `unknown field "spec.bogus"`},
		{"SPEC in capitals", strings.Replace(goodProfile, "spec:", "SPEC:", 1), `unknown field "SPEC"`},
		{"TARGET in capitals", strings.Replace(goodProfile, "  target:", "  TARGET:", 1), `unknown field "spec.TARGET"`},
		{"scaleconfig in lower case", strings.Replace(goodProfile, "scaleConfig:", "scaleconfig:", 1), `unknown field "spec.scaleconfig"`},
		{"metadata field in capitals", strings.Replace(goodProfile, "  name:", "  NAME:", 1), `unknown field "metadata.NAME"`},
		{"spec twice", goodProfile + "spec: {target: {apiVersion: v1, kind: Pod, resource: pods}}\n", `"spec" already set`},
		{"KIND in capitals", strings.Replace(goodProfile, "kind: ScaleProfile", "KIND: ScaleProfile", 1), "document 1 has no kind"},
		{"kind in lower case", strings.Replace(goodProfile, "kind: ScaleProfile", "kind: scaleprofile", 1), `kind "scaleprofile" of scaleplane.io/v1alpha1 is not a kind scaleplane reads`},
		{"another group's ScaleProfile", strings.Replace(goodProfile, "scaleplane.io/v1alpha1", "evil.example/v1", 1), `apiVersion "evil.example/v1": must be "scaleplane.io/v1alpha1"`},
		{"a list, not an object", goodProfile + "---\n- a\n- b\n", "document 2 is not an object"},
		{"only a ClusterRole", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: x}\n", "holds no Configuration or ScaleProfile"},
		{"configuration with an unknown field", strings.Replace(minimalConfiguration, "profiles: []", "PROFILES: []", 1), `unknown field "PROFILES"`},
	}
	// The files the hostile ones are made from pass.
	good := filepath.Join(t.TempDir(), "good.yaml")
	if err := os.WriteFile(good, []byte(minimalConfiguration+"---\n"+goodProfile), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := configCheck([]string{"-f", good}, &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), "1 profile(s) OK") {
		t.Fatalf("config check of the good file: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if code := render([]string{"webhooks", "--config", deploy, "-f", good}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "scaledapps") {
		t.Fatalf("render of the good file: exit %d\n%s", code, stderr.String())
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "profiles.yaml")
			if err := os.WriteFile(file, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := configCheck([]string{"-f", file}, &stdout, &stderr)
			if code != 1 || !strings.Contains(stdout.String(), tc.says) {
				t.Errorf("config check: exit %d, want 1 and an error saying %q\n%s%s", code, tc.says, stdout.String(), stderr.String())
			}
			stdout.Reset()
			stderr.Reset()
			code = render([]string{"webhooks", "--config", deploy, "-f", file}, &stdout, &stderr)
			if code != 1 || stdout.Len() > 0 || !strings.Contains(stderr.String(), tc.says) {
				t.Errorf("render: exit %d, want 1, nothing printed and an error saying %q\nstdout:\n%s\nstderr:\n%s", code, tc.says, stdout.String(), stderr.String())
			}
		})
	}
}
