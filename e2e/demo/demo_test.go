// Package demo tests `scaleplane dev` (what `make demo` runs) as a user meets
// it: the built binary starts its embedded control plane, prints the ready
// line and kubectl commands that all work, and leaves no etcd,
// kube-apiserver or kube-controller-manager behind when interrupted or when
// start-up fails halfway.
package demo

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

const readyLine = "scaleplane dev: ready"

func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "scaleplane")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = framework.BinaryModuleDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build scaleplane: %v\n%s", err, out)
	}
	return bin
}

// devProcess is a running `scaleplane dev`.
type devProcess struct {
	cmd      *exec.Cmd
	exited   chan struct{}
	lines    chan string
	output   *strings.Builder
	children map[int]string
}

// devEnv is where a dev process runs: its working folder (where the
// default kubeconfig goes) and TMPDIR (where its temporary data folder goes,
// and where it looks for the folders of killed runs). Empty means the
// repository root and the test process's TMPDIR.
type devEnv struct{ cwd, tmp string }

func startDev(t *testing.T, bin string, args ...string) *devProcess {
	t.Helper()
	return startDevIn(t, bin, devEnv{}, args...)
}

func startDevIn(t *testing.T, bin string, env devEnv, args ...string) *devProcess {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"dev"}, args...)...)
	cmd.Dir = framework.RepoRoot()
	if env.cwd != "" {
		cmd.Dir = env.cwd
	}
	if env.tmp != "" {
		cmd.Env = append(os.Environ(), "TMPDIR="+env.tmp)
	}
	// An io.Pipe (not StdoutPipe) lets Wait run at once, so the test learns
	// of an exit as soon as it happens.
	stdout, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("start scaleplane dev: %v", err)
	}
	p := &devProcess{cmd: cmd, exited: make(chan struct{}), lines: make(chan string, 1024), output: &strings.Builder{}, children: map[int]string{}}
	go func() {
		_ = cmd.Wait()
		pw.Close()
		close(p.exited)
	}()
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// waitFor reads output until a line contains want; it returns the lines read.
func (p *devProcess) waitFor(t *testing.T, want string, timeout time.Duration) []string {
	t.Helper()
	deadline := time.After(timeout)
	var got []string
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("scaleplane dev exited before printing %q; output:\n%s", want, p.output.String())
			}
			p.output.WriteString(line + "\n")
			got = append(got, line)
			if strings.Contains(line, want) {
				return got
			}
		case <-deadline:
			t.Fatalf("scaleplane dev did not print %q within %s; output:\n%s", want, timeout, p.output.String())
		}
	}
}

// drain reads the rest of the output until the process closes it.
func (p *devProcess) drain(timeout time.Duration) {
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				return
			}
			p.output.WriteString(line + "\n")
		case <-deadline:
			return
		}
	}
}

// descendants lists the processes below pid with their command lines.
func descendants(pid int) map[int]string {
	parents := map[int][]int{}
	cmdlines := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command name in stat may hold spaces; fields after ')' are fixed.
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		parents[ppid] = append(parents[ppid], child)
		cl, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cmdlines[child] = strings.ReplaceAll(string(cl), "\x00", " ")
	}
	out := map[int]string{}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range parents[p] {
			out[c] = cmdlines[c]
			queue = append(queue, c)
		}
	}
	return out
}

// alive lists which of procs still run the same command.
func alive(procs map[int]string) []string {
	var out []string
	for pid, cl := range procs {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		if strings.ReplaceAll(string(data), "\x00", " ") == cl {
			stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if strings.Contains(string(stat), ") Z ") {
				continue // exited, waiting to be reaped
			}
			out = append(out, fmt.Sprintf("%d %s", pid, cl))
		}
	}
	return out
}

func controlPlaneChildren(procs map[int]string) map[int]string {
	out := map[int]string{}
	for pid, cl := range procs {
		for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
			if strings.Contains(cl, "/"+name+" ") || strings.HasSuffix(cl, "/"+name) {
				out[pid] = cl
			}
		}
	}
	return out
}

// TestDevServesPrintedCommandsAndCleansUp is `make demo` from a user's seat:
// every command the banner prints is run as printed, and what each is
// meant to show is checked: the samples' defaults,
// fan-out, HPA and refusal; then the autoscaling walkthrough: the PromQL
// sample sits at zero, the load command wakes it and takes it to at least
// 3 replicas with every rack following and status.replicas set, without
// load it goes back to 0 and its pods stop, activity wakes it to 1, and
// explain shows each decision. The terminal printed a line for each of
// those, and no log line; Ctrl-C leaves nothing running.
func TestDevServesPrintedCommandsAndCleansUp(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "dev.kubeconfig")
	start := time.Now()
	p := startDev(t, bin, "--kubeconfig", kubeconfig)
	p.waitFor(t, readyLine, 3*time.Minute)
	t.Logf("scaleplane dev ready in %s", time.Since(start).Round(time.Millisecond))
	printed := p.waitFor(t, "Press Ctrl-C", 10*time.Second)
	term := p.follow()

	children := controlPlaneChildren(descendants(p.cmd.Process.Pid))
	if len(children) != 3 {
		t.Fatalf("want etcd, kube-apiserver and kube-controller-manager below scaleplane dev, found %v", children)
	}
	logFileOf(t, printed)

	exports, steps := commands(printed)
	if len(steps) < 14 {
		t.Fatalf("found %d printed commands, want at least 14; output:\n%s", len(steps), strings.Join(printed, "\n"))
	}
	w := newWalk(t, exports, kubeconfig)
	for _, s := range steps {
		w.run(s)
		if t.Failed() {
			break
		}
	}
	t.Logf("walkthrough took %s", time.Since(w.start).Round(100*time.Millisecond))
	for _, out := range w.stopBackground() {
		checkWatch(t, out)
	}
	checkTerminal(t, term.all())
	t.Logf("terminal after the banner:\n%s", strings.Join(term.all(), "\n"))

	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	waitExit(t, p, 60*time.Second)
	t.Logf("stopped in %s", time.Since(stopped).Round(100*time.Millisecond))
	<-term.done
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("scaleplane dev exited %d after Ctrl-C; output after the banner:\n%s", code, strings.Join(term.all(), "\n"))
	}
	if left := alive(children); len(left) > 0 {
		t.Fatalf("processes left after Ctrl-C: %v", left)
	}
	if _, err := os.Stat(kubeconfig); !os.IsNotExist(err) {
		t.Errorf("kubeconfig %s was not removed on exit (err=%v)", kubeconfig, err)
	}
}

// TestDevFailingHalfwayLeavesNothing makes start-up fail after the control
// plane is up (a profile for a kind no CRD serves) and checks that the
// control plane went down with it.
func TestDevFailingHalfwayLeavesNothing(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(`apiVersion: config.scaleplane.io/v1alpha2
kind: Configuration
profiles:
- target: {apiVersion: missing.example.com/v1, kind: Ghost, resource: ghosts}
  scaleConfig: {path: .spec.scaleConfig}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startDev(t, bin, "--kubeconfig", filepath.Join(dir, "kc"), "--config", cfg)
	var children map[int]string
	framework.Eventually(t, 3*time.Minute, func(context.Context) (bool, string) {
		select {
		case <-p.exited:
			return true, ""
		default:
		}
		for pid, cl := range controlPlaneChildren(descendants(p.cmd.Process.Pid)) {
			if children == nil {
				children = map[int]string{}
			}
			children[pid] = cl
		}
		return len(children) >= 2, fmt.Sprintf("control plane children seen so far: %v", children)
	})
	waitExit(t, p, 3*time.Minute)
	if p.cmd.ProcessState.ExitCode() == 0 {
		t.Errorf("scaleplane dev exited 0 with a profile for a kind nobody serves; output:\n%s", p.output.String())
	}
	if !strings.Contains(p.output.String(), "Ghost") && !strings.Contains(p.output.String(), "ghosts") {
		t.Errorf("the error does not name the kind that is missing; output:\n%s", p.output.String())
	}
	if left := alive(children); len(left) > 0 {
		t.Fatalf("processes left after a failed start: %v", left)
	}
}

func waitExit(t *testing.T, p *devProcess, timeout time.Duration) {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		t.Fatalf("scaleplane dev did not exit within %s; output:\n%s", timeout, p.output.String())
	}
	p.drain(5 * time.Second)
}
