package demo

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/scaleplane/scaleplane/controlplane"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// `scaleplane dev` killed with SIGKILL takes its
// control plane with it and the next start removes what it left; paths the
// user gives it are never deleted or overwritten.

const devContext = "scaleplane-dev"

// controlPlaneProcesses reads the identities of etcd, kube-apiserver and
// kube-controller-manager below a dev process, and makes sure the test
// leaves none of them running whatever happens.
func controlPlaneProcesses(t *testing.T, p *devProcess) []controlplane.Process {
	t.Helper()
	var procs []controlplane.Process
	for pid := range controlPlaneChildren(descendants(p.cmd.Process.Pid)) {
		if proc, err := controlplane.ReadProcess(pid); err == nil {
			procs = append(procs, proc)
		}
	}
	if len(procs) != 3 {
		t.Fatalf("want etcd, kube-apiserver and kube-controller-manager below scaleplane dev, found %v", procs)
	}
	t.Cleanup(func() {
		for _, proc := range procs {
			_ = proc.Kill(10 * time.Second) // only if it is still the same process
		}
	})
	return procs
}

func running(procs []controlplane.Process) []string {
	var out []string
	for _, p := range procs {
		if p.Running() {
			out = append(out, p.String())
		}
	}
	return out
}

// printed returns what follows prefix on a line of the output.
func printed(t *testing.T, lines []string, prefix string) string {
	t.Helper()
	for _, line := range lines {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			return rest
		}
	}
	t.Fatalf("no line starts with %q in:\n%s", prefix, strings.Join(lines, "\n"))
	return ""
}

func dataFolderOf(t *testing.T, lines []string) string {
	t.Helper()
	dir, _, _ := strings.Cut(printed(t, lines, "Data folder: "), " (")
	return dir
}

// kubectl runs the real kubectl with the given kubeconfig and its current
// context, as a user who exported KUBECONFIG would.
func kubectl(ctx context.Context, kubeconfig string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, framework.Binary(controlplane.KubectlBinary), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// snapshot maps every path under dir to its content and mode.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[rel] = info.Mode().String()
			return nil
		}
		data, err := os.ReadFile(path)
		out[rel] = info.Mode().String() + " " + string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitRefused waits for a dev that must refuse to start to exit, and
// returns its output. One that gets ready instead is stopped and the test
// fails.
func waitRefused(t *testing.T, p *devProcess) string {
	t.Helper()
	deadline := time.After(3 * time.Minute)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				<-p.exited
				if code := p.cmd.ProcessState.ExitCode(); code == 0 {
					t.Fatalf("scaleplane dev exited 0; output:\n%s", p.output.String())
				}
				return p.output.String()
			}
			p.output.WriteString(line + "\n")
			if strings.Contains(line, readyLine) {
				_ = p.cmd.Process.Signal(syscall.SIGINT)
				waitExit(t, p, 60*time.Second)
				t.Fatalf("scaleplane dev started instead of refusing; output:\n%s", p.output.String())
			}
		case <-deadline:
			t.Fatalf("scaleplane dev neither refused nor started within 3m; output:\n%s", p.output.String())
		}
	}
}

// TestKillNineLeavesNoControlPlane: after `kill -9` of
// `scaleplane dev`, etcd, kube-apiserver and kube-controller-manager exit
// (the parent-death signal), and the next start removes what the killed run
// left: its temporary data folder with the control plane's credentials and
// its kubeconfig. It runs with the default kubeconfig path, which still
// works as before: written at start, usable with kubectl, removed at exit.
func TestKillNineLeavesNoControlPlane(t *testing.T) {
	bin := buildBinary(t)
	env := devEnv{cwd: t.TempDir(), tmp: t.TempDir()}
	kubeconfig := filepath.Join(env.cwd, "scaleplane-dev.kubeconfig")

	p := startDevIn(t, bin, env)
	lines := p.waitFor(t, "Press Ctrl-C", 3*time.Minute)
	procs := controlPlaneProcesses(t, p)

	killed := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	framework.Eventually(t, 30*time.Second, func(context.Context) (bool, string) {
		left := running(procs)
		return len(left) == 0, fmt.Sprintf("still running after scaleplane dev was killed: %v", left)
	})
	t.Logf("kill -9 -> etcd, kube-apiserver and kube-controller-manager gone in %s", time.Since(killed).Round(100*time.Microsecond))
	// What only the next start can remove: a kill runs no code of dev's.
	dataDir := dataFolderOf(t, lines)
	if !strings.HasPrefix(dataDir, env.tmp) {
		t.Fatalf("data folder %s is not in TMPDIR %s", dataDir, env.tmp)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "apiserver")); err != nil {
		t.Fatalf("the killed run's credentials are not where the test expects them: %v", err)
	}
	if _, err := os.Stat(kubeconfig); err != nil {
		t.Fatalf("the killed run's kubeconfig: %v", err)
	}

	start := time.Now()
	p2 := startDevIn(t, bin, env)
	lines2 := p2.waitFor(t, "Press Ctrl-C", 3*time.Minute)
	t.Logf("next start (with clean-up) ready in %s", time.Since(start).Round(time.Millisecond))
	procs2 := controlPlaneProcesses(t, p2)
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("the killed run's data folder %s is still there after the next start (err=%v)", dataDir, err)
	}
	if !strings.Contains(p2.output.String(), "left by killed scaleplane dev") {
		t.Errorf("the next start does not say what it removed; output:\n%s", p2.output.String())
	}
	if got := printed(t, lines2, "  $ export KUBECONFIG="); !strings.HasPrefix(got, kubeconfig+" ") {
		t.Errorf("printed export %q, want the default kubeconfig %s", got, kubeconfig)
	}
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Contexts) != 1 || cfg.CurrentContext != devContext {
		t.Errorf("default kubeconfig has contexts %v (current %q), want only this run's %s", slices.Sorted(maps.Keys(cfg.Contexts)), cfg.CurrentContext, devContext)
	}
	if out, err := kubectl(context.Background(), kubeconfig, "get", "namespace", "default"); err != nil {
		t.Errorf("kubectl with the default kubeconfig: %v\n%s", err, out)
	}

	if err := p2.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitExit(t, p2, 60*time.Second)
	if code := p2.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("scaleplane dev exited %d after Ctrl-C; output:\n%s", code, p2.output.String())
	}
	if left := running(procs2); len(left) > 0 {
		t.Errorf("processes left after Ctrl-C: %v", left)
	}
	if _, err := os.Stat(kubeconfig); !os.IsNotExist(err) {
		t.Errorf("default kubeconfig %s not removed at exit (err=%v)", kubeconfig, err)
	}
	if left, _ := filepath.Glob(filepath.Join(env.tmp, "scaleplane-dev-*")); len(left) > 0 {
		t.Errorf("data folders left in TMPDIR: %v", left)
	}
}

// TestKeptDataReusedAfterKill: a kept data folder (--data-dir
// with --keep) of a killed run is reused by the next start: etcd's data is
// there, and the webhook configurations the killed run left in it (failing
// closed at a port nobody serves) are gone, even when the next run names
// its configurations differently.
func TestKeptDataReusedAfterKill(t *testing.T) {
	bin := buildBinary(t)
	root := t.TempDir()
	dataDir := filepath.Join(root, "data")
	kubeconfig := filepath.Join(root, "dev.kubeconfig")
	env := devEnv{tmp: t.TempDir()}

	p := startDevIn(t, bin, env, "--data-dir", dataDir, "--keep", "--kubeconfig", kubeconfig)
	p.waitFor(t, "Press Ctrl-C", 3*time.Minute)
	procs := controlPlaneProcesses(t, p)
	ctx := context.Background()
	if out, err := kubectl(ctx, kubeconfig, "create", "namespace", "kept"); err != nil {
		t.Fatalf("create namespace: %v\n%s", err, out)
	}
	webhooks := func() string {
		out, err := kubectl(ctx, kubeconfig, "get", "mutatingwebhookconfigurations,validatingwebhookconfigurations",
			"-o", `jsonpath={range .items[*]}{.metadata.name}{" "}{.webhooks[*].clientConfig.url}{"\n"}{end}`)
		if err != nil {
			t.Fatalf("list webhook configurations: %v\n%s", err, out)
		}
		return out
	}
	first := webhooks()
	if !strings.Contains(first, "scaleplane-mutating-webhook-configuration") {
		t.Fatalf("the first run has no webhook configurations of its own:\n%s", first)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	framework.Eventually(t, 30*time.Second, func(context.Context) (bool, string) {
		left := running(procs)
		return len(left) == 0, fmt.Sprintf("still running after scaleplane dev was killed: %v", left)
	})

	config, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "config", "samples", "deploy", "scaleplane-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	renamed := strings.Replace(string(config), "webhook:\n", "webhook:\n  mutatingConfigurationName: second-mutating\n  validatingConfigurationName: second-validating\n", 1)
	configPath := filepath.Join(root, "config.yaml")
	if err := os.WriteFile(configPath, []byte(renamed), 0o600); err != nil {
		t.Fatal(err)
	}
	p2 := startDevIn(t, bin, env, "--data-dir", dataDir, "--keep", "--kubeconfig", kubeconfig, "--config", configPath)
	p2.waitFor(t, "Press Ctrl-C", 3*time.Minute)
	controlPlaneProcesses(t, p2)
	if out, err := kubectl(ctx, kubeconfig, "get", "namespace", "kept"); err != nil {
		t.Errorf("etcd's data was not reused: %v\n%s", err, out)
	}
	second := webhooks()
	var names []string
	urls := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(second), "\n") {
		fields := strings.Fields(line)
		names = append(names, fields[0])
		for _, u := range fields[1:] {
			host, _, _ := strings.Cut(strings.TrimPrefix(u, "https://"), "/")
			urls[host] = true
		}
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"second-mutating", "second-validating"}, names); diff != "" {
		t.Errorf("webhook configurations after the next start (-want +got):\n%s\nfirst run's:\n%s", diff, first)
	}
	if len(urls) != 1 {
		t.Errorf("webhooks call more than one address (one is the killed run's): %v", urls)
	}

	if err := p2.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitExit(t, p2, 60*time.Second)
	if _, err := os.Stat(filepath.Join(dataDir, "etcd")); err != nil {
		t.Errorf("--keep did not keep etcd's data: %v", err)
	}
}

// TestForeignDataDirRefused: a non-empty --data-dir that dev
// did not make is refused with what to do, before anything starts, and
// every file in it is left as it was.
func TestForeignDataDirRefused(t *testing.T) {
	bin := buildBinary(t)
	root := t.TempDir()
	dataDir := filepath.Join(root, "mine")
	if err := os.MkdirAll(filepath.Join(dataDir, "etcd"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"notes.txt": "my notes", "etcd/member": "my etcd", "kubeconfig": "mine"} {
		if err := os.WriteFile(filepath.Join(dataDir, name), []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(t, root)
	kubeconfig := filepath.Join(root, "dev.kubeconfig")
	tmp := t.TempDir()
	out := waitRefused(t, startDevIn(t, bin, devEnv{tmp: tmp}, "--data-dir", dataDir, "--kubeconfig", kubeconfig))
	if !strings.Contains(out, "is not empty and scaleplane dev did not make it") || !strings.Contains(out, "--data-dir") {
		t.Errorf("the refusal does not say why and what to do; output:\n%s", out)
	}
	if diff := cmp.Diff(before, snapshot(t, root)); diff != "" {
		t.Errorf("files changed by a refused start (-before +after):\n%s", diff)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("a refused start left %v in TMPDIR", left)
	}
}

// userKubeconfig is a user's kubeconfig: dev must add to it and give it
// back unchanged.
const userKubeconfig = `# kept by hand
apiVersion: v1
kind: Config
current-context: prod
contexts:
- name: prod
  context: {cluster: prod, user: alice, namespace: team-a}
- name: staging
  context: {cluster: staging, user: alice}
clusters:
- name: prod
  cluster: {server: "https://prod.example.com:6443", certificate-authority-data: LS0tLS1CRUdJTg==}
- name: staging
  cluster: {server: "https://staging.example.com", insecure-skip-tls-verify: true}
users:
- name: alice
  user: {token: secret-token}
`

func withoutDevEntries(cfg *clientcmdapi.Config) *clientcmdapi.Config {
	out := cfg.DeepCopy()
	delete(out.Clusters, devContext)
	delete(out.AuthInfos, devContext)
	delete(out.Contexts, devContext)
	out.CurrentContext = ""
	return out
}

var ignoreOrigin = cmp.Options{
	cmpopts.IgnoreFields(clientcmdapi.Cluster{}, "LocationOfOrigin"),
	cmpopts.IgnoreFields(clientcmdapi.AuthInfo{}, "LocationOfOrigin"),
	cmpopts.IgnoreFields(clientcmdapi.Context{}, "LocationOfOrigin"),
}

// TestUserKubeconfigKept: with --kubeconfig naming the user's
// own kubeconfig, dev adds its cluster, user and context (current while it
// runs) and leaves every entry of the user's as it was; after Ctrl-C the
// file is what it was before, and an empty --data-dir the user made is
// still there, empty.
func TestUserKubeconfigKept(t *testing.T) {
	bin := buildBinary(t)
	root := t.TempDir()
	kubeconfig := filepath.Join(root, "config")
	if err := os.WriteFile(kubeconfig, []byte(userKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(root, "empty")
	if err := os.Mkdir(dataDir, 0o750); err != nil {
		t.Fatal(err)
	}

	p := startDevIn(t, bin, devEnv{tmp: t.TempDir()}, "--kubeconfig", kubeconfig, "--data-dir", dataDir)
	lines := p.waitFor(t, "Press Ctrl-C", 3*time.Minute)
	procs := controlPlaneProcesses(t, p)
	during, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatalf("the kubeconfig cannot be read during the run: %v", err)
	}
	if during.CurrentContext != devContext || during.Contexts[devContext] == nil {
		t.Errorf("during the run: current context %q, want %s among %d contexts", during.CurrentContext, devContext, len(during.Contexts))
	}
	if diff := cmp.Diff(withoutDevEntries(before), withoutDevEntries(during), ignoreOrigin); diff != "" {
		t.Errorf("the user's entries changed during the run (-before +during):\n%s", diff)
	}
	if !strings.Contains(printed(t, lines, "Kubeconfig: "), "prod is current again") {
		t.Errorf("dev does not say it made its context current and what it restores; output:\n%s", p.output.String())
	}
	if out, err := kubectl(context.Background(), kubeconfig, "get", "namespace", "default"); err != nil {
		t.Errorf("kubectl with the user's kubeconfig during the run: %v\n%s", err, out)
	}

	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitExit(t, p, 60*time.Second)
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("scaleplane dev exited %d after Ctrl-C; output:\n%s", code, p.output.String())
	}
	if left := running(procs); len(left) > 0 {
		t.Errorf("processes left after Ctrl-C: %v", left)
	}
	after, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatalf("the kubeconfig cannot be read after the run: %v", err)
	}
	if diff := cmp.Diff(before, after, ignoreOrigin); diff != "" {
		t.Errorf("kubeconfig after the run (-before +after):\n%s", diff)
	}
	if data, _ := os.ReadFile(kubeconfig); !bytes.Equal(data, []byte(userKubeconfig)) {
		t.Errorf("kubeconfig bytes after the run differ from before:\n%s", data)
	}
	if info, err := os.Stat(kubeconfig); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode after the run: %v %v, want 0600", info.Mode(), err)
	}
	if entries, err := os.ReadDir(dataDir); err != nil || len(entries) > 0 {
		t.Errorf("the user's empty data folder after the run: %v entries, err %v; want it there and empty", entries, err)
	}
}

// TestUnparsableKubeconfigRefused: a --kubeconfig dev cannot
// parse is refused with a clear message before anything starts, and left
// as it was.
func TestUnparsableKubeconfigRefused(t *testing.T) {
	bin := buildBinary(t)
	root := t.TempDir()
	kubeconfig := filepath.Join(root, "config")
	const garbage = "clusters: [ {name: prod, cluster: {server: https://prod\n  this is not a kubeconfig\n"
	if err := os.WriteFile(kubeconfig, []byte(garbage), 0o600); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, root)
	tmp := t.TempDir()
	out := waitRefused(t, startDevIn(t, bin, devEnv{tmp: tmp}, "--kubeconfig", kubeconfig))
	if !strings.Contains(out, "cannot be parsed") || !strings.Contains(out, "--kubeconfig") {
		t.Errorf("the refusal does not say why and what to do; output:\n%s", out)
	}
	if diff := cmp.Diff(before, snapshot(t, root)); diff != "" {
		t.Errorf("files changed by a refused start (-before +after):\n%s", diff)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("a refused start left %v in TMPDIR", left)
	}
}
