package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestProfileInitGolden: `scaleplane profile init -f` over
// third-party-shaped CRDs (LeaderWorkerSet-like, Kyma-Function-like, a
// database with racks and a map of ready counts, a cluster-scoped kind and
// a kind without /scale, one with no room for a scale config). Regenerate
// the golden files with UPDATE_GOLDEN=1.
func TestProfileInitGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "profileinit", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	json, _ := filepath.Glob(filepath.Join("testdata", "profileinit", "*.json"))
	inputs = append(inputs, json...)
	if len(inputs) < 5 {
		t.Fatalf("found %d CRD files, want at least 5", len(inputs))
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := profileInit([]string{"-f", in}, strings.NewReader(""), &stdout, &stderr)
			got := fmt.Sprintf("# exit %d\n# stderr:\n%s# stdout:\n%s", code, indent(stderr.String()), stdout.String())
			checkGolden(t, strings.TrimSuffix(in, filepath.Ext(in))+".golden", got, fmt.Sprintf("profile init -f %s", in))
		})
	}
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("#   " + l)
		}
	}
	return b.String()
}

// Usage errors exit 2; a file without CRDs or unreadable exits 1.
func TestProfileInitUsage(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.yaml")
	if err := os.WriteFile(empty, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "give exactly one of --crd NAME"},
		{[]string{"-f", "a.yaml", "--crd", "x"}, 2, "give exactly one of --crd NAME"},
		{[]string{"-f", empty}, 1, "holds no CustomResourceDefinition"},
		{[]string{"-f", filepath.Join(t.TempDir(), "missing.yaml")}, 1, "no such file"},
		{[]string{"-f", filepath.Join("testdata", "profileinit", "function.yaml"), "--version", "v9"}, 1, "has no version v9 (served: v1alpha2)"},
	}
	for _, tt := range cases {
		var stdout, stderr bytes.Buffer
		if code := profileInit(tt.args, strings.NewReader(""), &stdout, &stderr); code != tt.code || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("profile init %q = %d, %q; want %d and %q", tt.args, code, stderr.String(), tt.code, tt.want)
		}
	}
}

// checkGolden compares got with the golden file, which UPDATE_GOLDEN=1
// writes first; what names the command in the failure.
func checkGolden(t *testing.T, golden, got, what string) {
	t.Helper()
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (UPDATE_GOLDEN=1 writes it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

// A CRD without /scale whose spec has member groups gets a ScaleHandle:
// the upstream ScyllaCluster CRD, unchanged (e2e/scalehandle/testdata),
// gives the ScaleHandle kind's profile, a role on scyllaclusters and a
// handle for the workload named by --name, with a comment saying why.
func TestProfileInitScaleHandleForScyllaCluster(t *testing.T) {
	in := filepath.Join("..", "..", "e2e", "scalehandle", "testdata", "scylla.scylladb.com_scyllaclusters.yaml")
	var stdout, stderr bytes.Buffer
	code := profileInit([]string{"-f", in, "--name", "db"}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"has no /scale subresource", "kind: ScaleHandle", "path: .spec.datacenter.racks", "name: scalehandles.scaleplane.io"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	got := fmt.Sprintf("# exit %d\n# stderr:\n%s# stdout:\n%s", code, indent(stderr.String()), stdout.String())
	checkGolden(t, filepath.Join("testdata", "profileinit", "scyllacluster-handle.golden"), got, "profile init -f "+in+" --name db")
}
