package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestVersionInfo: `scaleplane version` reports the release stamps
// when the build set them, and otherwise what the Go toolchain recorded.
func TestVersionInfo(t *testing.T) {
	stamped := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/scaleplane/scaleplane", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	tests := []struct {
		name              string
		ldVersion, commit string
		bi                *debug.BuildInfo
		want              VersionInfo
	}{{
		name: "release stamps win over build info", ldVersion: "v1.5.0", commit: "feedface", bi: stamped,
		want: VersionInfo{Version: "v1.5.0", Commit: "feedface", GoVersion: "go1.26.8", Platform: "linux/arm64", Modified: true},
	}, {
		name: "go install module@version", bi: stamped,
		want: VersionInfo{Version: "v1.4.0", Commit: "0123456789abcdef0123456789abcdef01234567", GoVersion: "go1.26.8", Platform: "linux/arm64", Modified: true},
	}, {
		name: "go build in a checkout without stamps",
		bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
		want: VersionInfo{Version: "(devel)", Commit: "unknown", GoVersion: "go1.26.8", Platform: "linux/arm64"},
	}, {
		name: "no build info at all",
		want: VersionInfo{Version: "(devel)", Commit: "unknown", GoVersion: runtime.Version(), Platform: "linux/arm64"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := versionInfo(tc.ldVersion, tc.commit, tc.bi, "linux", "arm64")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("versionInfo (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVersionOutput(t *testing.T) {
	v := VersionInfo{Version: "v1.5.0", Commit: "feedface", GoVersion: "go1.26.8", Platform: "linux/amd64"}
	var out, errOut bytes.Buffer
	if code := writeVersion(&out, &errOut, nil, v); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	want := "scaleplane v1.5.0\ncommit: feedface\ngo: go1.26.8\nplatform: linux/amd64\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("text output (-want +got):\n%s", diff)
	}
	out.Reset()
	if code := writeVersion(&out, &errOut, []string{"-o", "json"}, v); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var got VersionInfo
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("json output %q: %v", out.String(), err)
	}
	if diff := cmp.Diff(v, got); diff != "" {
		t.Errorf("json output (-want +got):\n%s", diff)
	}
	errOut.Reset()
	if code := writeVersion(&out, &errOut, []string{"-o", "yaml"}, v); code != 2 || !bytes.Contains(errOut.Bytes(), []byte("use text or json")) {
		t.Errorf("-o yaml: exit %d, stderr %q; want 2 and what to use", code, errOut.String())
	}
}

// TestVersionStampedBuild builds the binary with the -X flags the
// release build (hack/release) and the Dockerfile pass, and runs
// `scaleplane version`: a renamed variable would leave the stamp empty.
func TestVersionStampedBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "scaleplane")
	build := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-tags", "nodev", "-o", bin,
		"-ldflags", "-X main.version=v9.8.7 -X main.commit=0123456789abcdef0123456789abcdef01234567", ".")
	// The release build's environment (hack/release/image.BuildBinary), so
	// both share the build cache.
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOAMD64=v1", "GOARM64=v8.0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// A pod's root is read-only: a release build must not write at start
	// (controller-runtime's envtest creates a folder under TMPDIR in an init
	// function, so linking it, even through a dev-only file without the
	// nodev tag, crashes the container before main runs).
	version := exec.Command(bin, "version", "-o", "json")
	version.Env = append(os.Environ(), "TMPDIR=/proc/scaleplane-read-only", "XDG_CACHE_HOME=/proc/scaleplane-read-only", "HOME=/proc/scaleplane-read-only")
	out, err := version.Output()
	if err != nil {
		t.Fatalf("scaleplane version with a read-only TMPDIR: %v", err)
	}
	var got VersionInfo
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
	want := VersionInfo{Version: "v9.8.7", Commit: "0123456789abcdef0123456789abcdef01234567", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scaleplane version of a stamped build (-want +got):\n%s", diff)
	}
	// The release build has no dev mode, and says how to get one.
	out, err = exec.Command(bin, "dev").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !bytes.Contains(out, []byte("make demo")) {
		t.Errorf("scaleplane dev in a -tags nodev build: %v %s; want exit 2 saying how to run dev mode", err, out)
	}
}
