package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/scaleplane/scaleplane/profile"
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

// clusterAdminForAll is what a hostile CRD name tries to smuggle into the
// output of profile init, which the user pipes to kubectl apply.
const clusterAdminForAll = "\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: pwned}\n" +
	"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n" +
	"subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: system:authenticated}]\n---\n# "

// documentKinds returns the kind of every YAML document of a stream.
func documentKinds(t *testing.T, stream string) []string {
	t.Helper()
	var kinds []string
	for _, doc := range strings.Split(stream, "\n---\n") {
		var tm struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("document %q: %v", doc, err)
		}
		kinds = append(kinds, tm.Kind)
	}
	return kinds
}

// TestProfileInitRefusesHostileCRDNames: a CRD file's names are written
// into the ScaleProfile, the ClusterRole and their comments. Names the API
// server would refuse (a line break and "---" followed by a
// ClusterRoleBinding to cluster-admin, in the CRD's name, group, kind,
// plural or version) are refused with what is wrong, and nothing of that
// CRD is printed; the other CRDs of the file still are.
func TestProfileInitRefusesHostileCRDNames(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "profileinit", "function.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	good := func() *apiextensionsv1.CustomResourceDefinition {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			t.Fatal(err)
		}
		return crd
	}
	cases := []struct {
		name   string
		mutate func(*apiextensionsv1.CustomResourceDefinition)
		says   string
	}{
		{"metadata.name", func(c *apiextensionsv1.CustomResourceDefinition) { c.Name += clusterAdminForAll }, "metadata.name: Invalid value"},
		{"metadata.name of another kind", func(c *apiextensionsv1.CustomResourceDefinition) { c.Name = "secrets.serverless.example.org" }, `must be spec.names.plural+"."+spec.group`},
		{"spec.group", func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Group += clusterAdminForAll }, "spec.group: Invalid value"},
		{"spec.names.kind", func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Names.Kind += clusterAdminForAll }, "spec.names.kind: Invalid value"},
		{"spec.names.plural", func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Names.Plural += clusterAdminForAll }, "spec.names.plural: Invalid value"},
		{"spec.versions[0].name", func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[0].Name += clusterAdminForAll }, "spec.versions[0].name: Invalid value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hostile := good()
			tc.mutate(hostile)
			h, err := yaml.Marshal(hostile)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "crds.yaml")
			if err := os.WriteFile(file, append(append(h, "---\n"...), data...), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := profileInit([]string{"-f", file}, strings.NewReader(""), &stdout, &stderr)
			if code != 1 || !strings.Contains(stderr.String(), tc.says) {
				t.Errorf("exit %d, want 1 and stderr saying %q:\n%s", code, tc.says, stderr.String())
			}
			if diff := strings.Join(documentKinds(t, stdout.String()), ","); diff != "ScaleProfile,ClusterRole" {
				t.Errorf("printed documents %s, want the good CRD's ScaleProfile,ClusterRole only:\n%s", diff, stdout.String())
			}
			if strings.Contains(stdout.String(), "cluster-admin") {
				t.Errorf("the hostile name reached the output:\n%s", stdout.String())
			}
		})
	}
}

// TestProfileInitCommentsStayComments: whatever name reaches the comments
// profile init writes, a line break in it cannot end the comment.
func TestProfileInitCommentsStayComments(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	data, err := os.ReadFile(filepath.Join("testdata", "profileinit", "function.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatal(err)
	}
	in, err := profile.Infer(crd, "")
	if err != nil {
		t.Fatal(err)
	}
	crd.Name += clusterAdminForAll
	crd.Spec.Names.Kind += clusterAdminForAll
	out, err := renderProfile(crd, in)
	if err != nil {
		t.Fatal(err)
	}
	if kinds := strings.Join(documentKinds(t, out), ","); kinds != "ScaleProfile,ClusterRole" {
		t.Errorf("documents %s, want ScaleProfile,ClusterRole:\n%s", kinds, out)
	}
}

// TestConfigCheckHostileBindAddresses: a configuration whose external
// scaler cannot listen (a port past 65535, the metrics or webhook server's
// address) passed config check and crash-looped once elected; config check
// reports it with the field path, against the flags the binary runs with.
func TestConfigCheckHostileBindAddresses(t *testing.T) {
	withScaler := func(addr string) string {
		return minimalConfiguration + "autoscaler:\n  externalScaler: {bindAddress: \"" + addr + "\"}\n"
	}
	cases := []struct {
		name    string
		content string
		flags   []string
		code    int
		says    string
	}{
		{"port past 65535", withScaler("127.0.0.1:99999"), nil, 1, "autoscaler.externalScaler.bindAddress: Invalid value: \"127.0.0.1:99999\": port 99999 is not a number from 1 to 65535"},
		{"the metrics server's address", withScaler(":8443"), nil, 1, "--metrics-bind-address: Duplicate value"},
		{"the webhook server's address", withScaler(":9443"), nil, 1, "autoscaler.externalScaler.bindAddress: Duplicate value"},
		{"the probe server's address as the binary runs", withScaler(":9090"), []string{"--health-probe-bind-address", "127.0.0.1:9090"}, 1, "--health-probe-bind-address: Duplicate value"},
		{"a free port", withScaler(":9090"), nil, 0, "0 profile(s) OK"},
		{"the metrics port, moved by the flag", withScaler(":8443"), []string{"--metrics-bind-address", ":8444"}, 0, "0 profile(s) OK"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(file, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := configCheck(append([]string{"-f", file}, tc.flags...), &stdout, &stderr)
			if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.says) {
				t.Errorf("exit %d, want %d and %q\n%s%s", code, tc.code, tc.says, stdout.String(), stderr.String())
			}
		})
	}
}
