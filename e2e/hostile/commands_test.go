package hostile

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

// commandInput runs the binary under test with args; files are written
// into a temporary folder first, and {dir} in args names that folder.
type commandInput struct {
	name  string
	args  []string
	files map[string]string
	want  commandResult
}

// commandResult is what a run showed: its exit code, whether its output
// says what it should (the field path or flag to change), and whether its
// standard output holds a document a `| kubectl apply -f -` would create
// that the input smuggled in.
type commandResult struct {
	Exit     int
	Says     bool
	Smuggled bool
}

// smuggled is the document a hostile CRD name tries to add to what
// profile init prints.
const smuggled = "kind: ClusterRoleBinding"

// configWith is a configuration of no profiles with rest appended.
func configWith(rest string) string {
	return "apiVersion: config.scaleplane.io/v1alpha2\nkind: Configuration\nprofiles: []\n" + rest
}

// scaleProfile is a ScaleProfile of a kind the sample configuration does
// not profile, with edit applied to its text.
func scaleProfile(edit func(string) string) string {
	return edit(`apiVersion: scaleplane.io/v1alpha1
kind: ScaleProfile
metadata:
  name: scaledapps.apps.example.org
spec:
  target: {apiVersion: apps.example.org/v1, kind: ScaledApp, resource: scaledapps}
  scaleConfig: {path: .spec.scaleConfig}
`)
}

func same(s string) string { return s }

// commandInputs: files and flags handed to the offline commands (config
// check, render, profile init) and to a start, which a CI job or a
// copy-pasted command line passes on. Before, a configuration whose
// external scaler could not listen passed config check and crash-looped
// the elected leader, a ScaleProfile with SPEC: or after a Configuration
// passed unchecked, a CRD's name could add a ClusterRoleBinding to
// cluster-admin to what profile init prints, and render took a namespace
// with a path in it and a webhook URL on port 99999.
func (s *suite) commandInputs(t *testing.T) {
	crd, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "config", "samples", "crd", "samples.scaleplane.io_rackedclusters.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	hostileCRD := strings.Replace(string(crd), "  name: rackedclusters.samples.scaleplane.io",
		`  name: "rackedclusters.samples.scaleplane.io\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: pwned}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: 'system:authenticated'}]\n---\n# "`, 1)
	config := filepath.Join(framework.RepoRoot(), "config", "samples", "deploy", "scaleplane-config.yaml")
	// A start must refuse before it reads a kubeconfig: this one does not
	// exist, so a start that went on would say so instead.
	start := func(cfg string, flags ...string) []string {
		return append([]string{"--config", cfg, "--kubeconfig", "{dir}/no-kubeconfig", "--leader-elect"}, flags...)
	}
	inputs := []commandInput{
		{name: "config check: external scaler on port 99999", args: []string{"config", "check", "-f", "{dir}/c.yaml"},
			files: map[string]string{"c.yaml": configWith("autoscaler:\n  externalScaler: {bindAddress: \"127.0.0.1:99999\"}\n")},
			want:  commandResult{Exit: 1, Says: true}},
		{name: "config check: external scaler on the metrics server's address", args: []string{"config", "check", "-f", "{dir}/c.yaml"},
			files: map[string]string{"c.yaml": configWith("autoscaler:\n  externalScaler: {bindAddress: \":8443\"}\n")},
			want:  commandResult{Exit: 1, Says: true}},
		{name: "start: external scaler on port 99999", args: start("{dir}/c.yaml"),
			files: map[string]string{"c.yaml": configWith("autoscaler:\n  externalScaler: {bindAddress: \"127.0.0.1:99999\"}\n")},
			want:  commandResult{Exit: 2, Says: true}},
		{name: "start: external scaler on the metrics server's address", args: start("{dir}/c.yaml", "--metrics-bind-address", "127.0.0.1:18443"),
			files: map[string]string{"c.yaml": configWith("autoscaler:\n  externalScaler: {bindAddress: \"127.0.0.1:18443\"}\n")},
			want:  commandResult{Exit: 2, Says: true}},
		{name: "config check: a Configuration, then an invalid ScaleProfile", args: []string{"config", "check", "-f", "{dir}/p.yaml"},
			files: map[string]string{"p.yaml": configWith("") + "---\n" + scaleProfile(func(p string) string { return strings.Replace(p, ".spec.scaleConfig", ".status.x", 1) })},
			want:  commandResult{Exit: 1, Says: true}},
		{name: "config check: SPEC in capitals", args: []string{"config", "check", "-f", "{dir}/p.yaml"},
			files: map[string]string{"p.yaml": scaleProfile(func(p string) string { return strings.Replace(p, "spec:", "SPEC:", 1) })},
			want:  commandResult{Exit: 1, Says: true}},
		{name: "config check: scaleconfig in lower case", args: []string{"config", "check", "-f", "{dir}/p.yaml"},
			files: map[string]string{"p.yaml": scaleProfile(func(p string) string { return strings.Replace(p, "scaleConfig:", "scaleconfig:", 1) })},
			want:  commandResult{Exit: 1, Says: true}},
		{name: "render: a ScaleProfile with TARGET in capitals", args: []string{"render", "webhooks", "--config", config, "-f", "{dir}/p.yaml"},
			files: map[string]string{"p.yaml": scaleProfile(func(p string) string { return strings.Replace(p, "  target:", "  TARGET:", 1) })},
			want:  commandResult{Exit: 1, Says: true}},
		{name: "render: a valid ScaleProfile (control)", args: []string{"render", "webhooks", "--config", config, "-f", "{dir}/p.yaml"},
			files: map[string]string{"p.yaml": scaleProfile(same)},
			want:  commandResult{Exit: 0, Says: true}},
		{name: "render: namespace Bad_NS/../x", args: []string{"render", "certificates", "--namespace", "Bad_NS/../x"},
			want: commandResult{Exit: 2, Says: true}},
		{name: "render: webhook URL on port 99999", args: []string{"render", "webhooks", "--config", config, "--webhook-url", "https://h:99999"},
			want: commandResult{Exit: 2, Says: true}},
		{name: "profile init: a CRD name holding a ClusterRoleBinding", args: []string{"profile", "init", "-f", "{dir}/crd.yaml"},
			files: map[string]string{"crd.yaml": hostileCRD},
			want:  commandResult{Exit: 1, Says: true}},
		{name: "profile init: the same CRD, named right (control)", args: []string{"profile", "init", "-f", "{dir}/crd.yaml"},
			files: map[string]string{"crd.yaml": string(crd)},
			want:  commandResult{Exit: 0, Says: true}},
	}
	// What each run's output must say, by input.
	says := map[string]string{
		"config check: external scaler on port 99999":                   "autoscaler.externalScaler.bindAddress: Invalid value",
		"config check: external scaler on the metrics server's address": "--metrics-bind-address: Duplicate value",
		"start: external scaler on port 99999":                          "autoscaler.externalScaler.bindAddress: Invalid value",
		"start: external scaler on the metrics server's address":        "--metrics-bind-address: Duplicate value",
		"config check: a Configuration, then an invalid ScaleProfile":   "spec.scaleConfig.path",
		"config check: SPEC in capitals":                                `unknown field "SPEC"`,
		"config check: scaleconfig in lower case":                       `unknown field "spec.scaleconfig"`,
		"render: a ScaleProfile with TARGET in capitals":                `unknown field "spec.TARGET"`,
		"render: a valid ScaleProfile (control)":                        "rackedclusters",
		"render: namespace Bad_NS/../x":                                 "--namespace",
		"render: webhook URL on port 99999":                             "port 99999 is not between 1 and 65535",
		"profile init: a CRD name holding a ClusterRoleBinding":         "metadata.name: Invalid value",
		"profile init: the same CRD, named right (control)":             "kind: ScaleProfile",
	}
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for name, content := range in.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			args := make([]string, len(in.args))
			for i, a := range in.args {
				args[i] = strings.ReplaceAll(a, "{dir}", dir)
			}
			ctx, cancel := context.WithTimeout(context.Background(), framework.DefaultTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, s.bin.path, args...)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(dir, "no-kubeconfig"))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.WaitDelay = time.Second
			err := cmd.Run()
			got := commandResult{Exit: cmd.ProcessState.ExitCode()}
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				t.Fatalf("run %q: %v", args, err)
			}
			got.Says = strings.Contains(stdout.String()+stderr.String(), says[in.name])
			got.Smuggled = strings.Contains(stdout.String(), smuggled)
			if got != in.want {
				t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			}
			s.expect(t, areaCommands, in.name, in.want, got, in.want.Exit != 0 && got.Says)
		})
	}
}
