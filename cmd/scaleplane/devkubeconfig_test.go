//go:build !nodev

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/scaleplane/scaleplane/controlplane"
)

// userKubeconfigYAML is a user's kubeconfig, with a comment and an order
// client-go would not write, to see that its bytes come back.
const userKubeconfigYAML = `# my clusters
apiVersion: v1
kind: Config
current-context: prod
contexts:
- name: staging
  context: {cluster: staging, user: bob}
- name: prod
  context: {cluster: prod, user: alice, namespace: team-a}
clusters:
- name: staging
  cluster:
    server: https://staging.example.com
    insecure-skip-tls-verify: true
- name: prod
  cluster:
    server: https://prod.example.com:6443
    certificate-authority-data: LS0tLS1CRUdJTg==
users:
- name: alice
  user:
    token: secret-token
- name: bob
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: aws
      args: [eks, get-token]
      interactiveMode: Never
preferences: {}
`

// clusterKubeconfig writes a kubeconfig like the one the control plane
// makes for its admin.
func clusterKubeconfig(t *testing.T) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:40001", CertificateAuthorityData: []byte("ca")}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("cert"), ClientKeyData: []byte("key")}
	cfg.Contexts["default"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	cfg.CurrentContext = "default"
	path := filepath.Join(t.TempDir(), "admin.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func self(t *testing.T) controlplane.Process {
	t.Helper()
	p, err := controlplane.Self()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// deadRun is the identity of a dev that no longer runs: this process's
// pid with another start time (a pid the kernel gave out again).
func deadRun(t *testing.T) controlplane.Process {
	p := self(t)
	p.StartTime--
	p.Cmdline = []string{"scaleplane", "dev"}
	return p
}

// startSleep starts a sleep and returns its identity once it has one: for
// a moment after exec the kernel shows an empty command line.
func startSleep(t *testing.T) (*exec.Cmd, controlplane.Process) {
	t.Helper()
	cmd := exec.Command("sleep", "120")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var p controlplane.Process
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		var err error
		p, err = controlplane.ReadProcess(cmd.Process.Pid)
		return err == nil && p.Name == "sleep", nil
	})
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("read the identity of sleep: %v (%+v)", err, p)
	}
	return cmd, p
}

// runningOther is the identity of another process that runs.
func runningOther(t *testing.T) controlplane.Process {
	t.Helper()
	cmd, p := startSleep(t)
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return p
}

func load(t *testing.T, path string) *clientcmdapi.Config {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// userEntries is cfg without dev's entries, for comparing what the user
// had with what is there.
func userEntries(cfg *clientcmdapi.Config) *clientcmdapi.Config {
	out := cfg.DeepCopy()
	entries(out, func(_, _ string, ext map[string]runtime.Object) bool {
		_, ok := marker(ext)
		return ok
	})
	out.CurrentContext = ""
	return out
}

var ignoreOrigin = cmpopts.IgnoreFields(clientcmdapi.Cluster{}, "LocationOfOrigin")
var ignoreOrigins = cmp.Options{ignoreOrigin, cmpopts.IgnoreFields(clientcmdapi.AuthInfo{}, "LocationOfOrigin"), cmpopts.IgnoreFields(clientcmdapi.Context{}, "LocationOfOrigin")}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// TestKubeconfigAddAndRemove: dev adds its entries to a user's
// kubeconfig without changing any of the user's, makes its context
// current, and at exit gives the file back byte for byte, mode included.
func TestKubeconfigAddAndRemove(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	writeFile(t, path, userKubeconfigYAML, 0o640)
	before := load(t, path)
	me := self(t)

	k, err := readUserKubeconfig(path, me)
	if err != nil {
		t.Fatal(err)
	}
	edit := k.edit()
	if diff := cmp.Diff(kubeconfigEdit{Path: path, Target: path, PreviousContext: "prod"}, edit); diff != "" {
		t.Errorf("edit (-want +got):\n%s", diff)
	}
	if err := k.add(clusterKubeconfig(t), me); err != nil {
		t.Fatal(err)
	}
	during := load(t, path)
	if during.CurrentContext != devKubeconfigName {
		t.Errorf("current context %q during the run, want %s", during.CurrentContext, devKubeconfigName)
	}
	want := &clientcmdapi.Context{Cluster: devKubeconfigName, AuthInfo: devKubeconfigName}
	if diff := cmp.Diff(want, during.Contexts[devKubeconfigName], ignoreOrigins, cmpopts.IgnoreFields(clientcmdapi.Context{}, "Extensions")); diff != "" {
		t.Errorf("dev context (-want +got):\n%s", diff)
	}
	if got := during.Clusters[devKubeconfigName]; got == nil || got.Server != "https://127.0.0.1:40001" {
		t.Errorf("dev cluster %+v, want the control plane's server", got)
	}
	if m, ok := marker(during.AuthInfos[devKubeconfigName].Extensions); !ok || m != markerOf(me) {
		t.Errorf("dev user is not marked as this run's: %+v", during.AuthInfos[devKubeconfigName].Extensions)
	}
	if diff := cmp.Diff(userEntries(before), userEntries(during), ignoreOrigins); diff != "" {
		t.Errorf("the user's entries changed during the run (-before +during):\n%s", diff)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o640 {
		t.Errorf("mode during the run %v, want 0640", info.Mode().Perm())
	}

	if err := k.remove(me, edit); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if diff := cmp.Diff(userKubeconfigYAML, string(after)); diff != "" {
		t.Errorf("file after the run (-before +after):\n%s", diff)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o640 {
		t.Errorf("mode after the run %v, want 0640", info.Mode().Perm())
	}
	if _, err := os.Stat(path + ".lock"); !os.IsNotExist(err) {
		t.Errorf("lock file left: %v", err)
	}
}

// TestKubeconfigRefused: a kubeconfig dev cannot read exactly,
// or whose scaleplane-dev entries are not dev's or belong to a running dev,
// is refused before anything starts, and left as it was.
func TestKubeconfigRefused(t *testing.T) {
	other := runningOther(t)
	othersEntries := func() string {
		cfg, _ := clientcmd.Load([]byte(userKubeconfigYAML))
		merged, err := addDevEntries(cfg, load(t, clusterKubeconfig(t)), other)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := clientcmd.Write(*merged)
		return string(data)
	}()
	tests := []struct {
		name, content, want string
	}{
		{name: "not YAML", content: "clusters: [\n  - {name: a\n", want: "cannot be parsed"},
		{name: "binary", content: "\x00\x01\x02garbage", want: "cannot be parsed"},
		{name: "field client-go does not know", content: strings.Replace(userKubeconfigYAML, "    token: secret-token\n", "    token: secret-token\n    tokn: typo\n", 1), want: "client-go does not read"},
		{name: "user's own scaleplane-dev context", content: strings.Replace(userKubeconfigYAML, "- name: staging\n  context:", "- name: scaleplane-dev\n  context: {cluster: prod, user: alice}\n- name: staging\n  context:", 1), want: "did not write"},
		{name: "entries of a running dev", content: othersEntries, want: "running scaleplane dev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config")
			writeFile(t, path, tt.content, 0o600)
			_, err := readUserKubeconfig(path, self(t))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("readUserKubeconfig error = %v, want one saying %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), "--kubeconfig") {
				t.Errorf("the error does not say what to do: %v", err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, []byte(tt.content)) {
				t.Errorf("the refused file changed")
			}
		})
	}
	t.Run("a folder", func(t *testing.T) {
		if _, err := readUserKubeconfig(t.TempDir(), self(t)); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("readUserKubeconfig of a folder = %v", err)
		}
	})
	t.Run("dangling link", func(t *testing.T) {
		link := filepath.Join(t.TempDir(), "config")
		if err := os.Symlink("/nonexistent/config", link); err != nil {
			t.Fatal(err)
		}
		if _, err := readUserKubeconfig(link, self(t)); err == nil || !strings.Contains(err.Error(), "symbolic link to a missing file") {
			t.Errorf("readUserKubeconfig of a dangling link = %v", err)
		}
	})
	t.Run("missing folder", func(t *testing.T) {
		if _, err := readUserKubeconfig(filepath.Join(t.TempDir(), "nope", "config"), self(t)); err == nil || !strings.Contains(err.Error(), "folder does not exist") {
			t.Errorf("readUserKubeconfig in a missing folder = %v", err)
		}
	})
}

// TestKubeconfigOwnFile: the default file, which dev writes,
// is dev's own: a new one is removed at exit, and one left by a killed run
// (only dead-run entries) is taken over and removed too.
func TestKubeconfigOwnFile(t *testing.T) {
	me := self(t)
	cluster := clusterKubeconfig(t)
	for _, leftover := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "scaleplane-dev.kubeconfig")
		if leftover {
			merged, err := addDevEntries(clientcmdapi.NewConfig(), load(t, cluster), deadRun(t))
			if err != nil {
				t.Fatal(err)
			}
			if err := clientcmd.WriteToFile(*merged, path); err != nil {
				t.Fatal(err)
			}
		}
		k, err := readUserKubeconfig(path, me)
		if err != nil {
			t.Fatal(err)
		}
		edit := k.edit()
		if !edit.CreatedFile {
			t.Errorf("leftover=%v: the file is not taken as dev's own", leftover)
		}
		if err := k.add(cluster, me); err != nil {
			t.Fatal(err)
		}
		if got := len(load(t, path).Contexts); got != 1 {
			t.Errorf("leftover=%v: %d contexts during the run, want 1 (the stale one replaced)", leftover, got)
		}
		if err := k.remove(me, edit); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("leftover=%v: dev's own kubeconfig not removed at exit: %v", leftover, err)
		}
	}
}

// TestKubeconfigRemoveOnlyOurs: at exit dev removes only the
// entries its run added; what the user did meanwhile stays, and the
// previous context comes back only while dev's is still current.
func TestKubeconfigRemoveOnlyOurs(t *testing.T) {
	me := self(t)
	base, err := clientcmd.Load([]byte(userKubeconfigYAML))
	if err != nil {
		t.Fatal(err)
	}
	withStale, err := addDevEntries(base, load(t, clusterKubeconfig(t)), deadRun(t))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		during      func(cfg *clientcmdapi.Config)
		previous    string
		wantCurrent string
		wantChanged bool
	}{
		{name: "untouched", during: func(*clientcmdapi.Config) {}, previous: "prod", wantCurrent: "prod", wantChanged: true},
		{name: "user switched context", during: func(cfg *clientcmdapi.Config) { cfg.CurrentContext = "staging" }, previous: "prod", wantCurrent: "staging", wantChanged: true},
		{name: "previous context deleted", during: func(cfg *clientcmdapi.Config) { delete(cfg.Contexts, "prod") }, previous: "prod", wantCurrent: "", wantChanged: true},
		{name: "no previous context", during: func(*clientcmdapi.Config) {}, previous: "", wantCurrent: "", wantChanged: true},
		{name: "user removed dev's entries", during: func(cfg *clientcmdapi.Config) {
			cfg.Contexts, cfg.Clusters, cfg.AuthInfos = base.DeepCopy().Contexts, base.DeepCopy().Clusters, base.DeepCopy().AuthInfos
			cfg.CurrentContext = "prod"
		}, previous: "prod", wantCurrent: "prod", wantChanged: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			merged, err := addDevEntries(base, load(t, clusterKubeconfig(t)), me)
			if err != nil {
				t.Fatal(err)
			}
			tt.during(merged)
			merged.Contexts["added-meanwhile"] = &clientcmdapi.Context{Cluster: "prod", AuthInfo: "alice"}
			got, changed := removeDevEntries(merged, me, tt.previous)
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if got.CurrentContext != tt.wantCurrent {
				t.Errorf("current context %q, want %q", got.CurrentContext, tt.wantCurrent)
			}
			if _, ok := got.Contexts["added-meanwhile"]; !ok {
				t.Error("a context the user added during the run was removed")
			}
			if got.Clusters[devKubeconfigName] != nil || got.AuthInfos[devKubeconfigName] != nil || got.Contexts[devKubeconfigName] != nil {
				t.Errorf("dev's entries are still there: %v", got)
			}
		})
	}
	t.Run("another run's entries stay", func(t *testing.T) {
		got, changed := removeDevEntries(withStale, me, "prod")
		if changed || got.Contexts[devKubeconfigName] == nil {
			t.Errorf("removeDevEntries removed entries of another run")
		}
	})
	t.Run("stale entries are dropped before adding", func(t *testing.T) {
		got, err := withoutStaleEntries(withStale, me, devMarker.running)
		if err != nil {
			t.Fatal(err)
		}
		want := base.DeepCopy()
		want.CurrentContext = ""
		if diff := cmp.Diff(want, got, ignoreOrigins); diff != "" {
			t.Errorf("without stale entries (-want +got):\n%s", diff)
		}
	})
}

// TestKubeconfigUndoAfterCrash: what a killed run added is
// removed by the next start from its recorded edit alone; the file is then
// the user's again (the same entries and current context).
func TestKubeconfigUndoAfterCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	writeFile(t, path, userKubeconfigYAML, 0o600)
	crashed := deadRun(t)
	k, err := readUserKubeconfig(path, crashed)
	if err != nil {
		t.Fatal(err)
	}
	edit := k.edit()
	if err := k.add(clusterKubeconfig(t), crashed); err != nil {
		t.Fatal(err)
	}
	if err := undoKubeconfig(crashedKubeconfig(edit), edit, crashed); err != nil {
		t.Fatal(err)
	}
	want, _ := clientcmd.Load([]byte(userKubeconfigYAML))
	if diff := cmp.Diff(want, load(t, path), ignoreOrigins); diff != "" {
		t.Errorf("kubeconfig after undoing a killed run (-before +after):\n%s", diff)
	}
}

// TestKubeconfigThroughSymlink: a kubeconfig reached through a
// symbolic link is edited where the link points; the link stays a link.
func TestKubeconfigThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real-config")
	writeFile(t, target, userKubeconfigYAML, 0o600)
	link := filepath.Join(dir, "config")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	me := self(t)
	k, err := readUserKubeconfig(link, me)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.add(clusterKubeconfig(t), me); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", info, err)
	}
	if load(t, target).Contexts[devKubeconfigName] == nil {
		t.Error("the link's target has no dev context")
	}
	if err := k.remove(me, k.edit()); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != userKubeconfigYAML {
		t.Errorf("target after the run differs:\n%s", got)
	}
}
