//go:build !nodev

package main

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	modulePath   = "github.com/scaleplane/scaleplane"
	devworldPath = modulePath + "/cmd/scaleplane/devworld"
)

// TestDevOnly: the sample pods cannot run in the in-cluster
// binary path. Package app (everything `scaleplane` without `dev` runs)
// does not reach package devworld through any import, and in this command
// only dev's own files import it (the release build leaves them out with
// -tags nodev). devworld itself refuses an API server off loopback
// (TestOnlyLoopbackAPIServer).
func TestDevOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", modulePath+"/cmd/scaleplane/app").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if slices.Contains(deps, devworldPath) {
		t.Errorf("package app reaches %s", devworldPath)
	}
	if !slices.Contains(deps, modulePath+"/webhooks") {
		t.Fatalf("go list -deps of app lacks webhooks; the check is broken:\n%s", out)
	}

	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var importers []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == devworldPath {
				importers = append(importers, f)
			}
		}
	}
	slices.Sort(importers)
	if diff := cmp.Diff([]string{"dev.go", "devterm.go"}, importers); diff != "" {
		t.Errorf("files importing devworld (-want +got):\n%s", diff)
	}
}
