package controlplane

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

const shimHelperEnv = "SCALEPLANE_SHIM_TEST_DIR"

// fakeBinaryDir makes a folder where "etcd" is sleep, so the shim can be
// tested without a control plane.
func fakeBinaryDir(t *testing.T, dir string) string {
	t.Helper()
	real := filepath.Join(dir, "real")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sleep, filepath.Join(real, EtcdBinary)); err != nil {
		t.Fatal(err)
	}
	return real
}

// TestShimHelperParent is not a test: TestShimChildDiesWithKilledParent
// runs this binary again with it as the parent that gets killed.
func TestShimHelperParent(t *testing.T) {
	dir := os.Getenv(shimHelperEnv)
	if dir == "" {
		t.Skip("helper process of TestShimChildDiesWithKilledParent")
	}
	links, err := writeShims(dir, filepath.Join(dir, "real"), os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(links[EtcdBinary], "300")
	l := newLauncher()
	l.run(func() { err = cmd.Start() })
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("child %d\n", cmd.Process.Pid)
	// Until the test kills this process (or, should the test die first,
	// closes stdin).
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = cmd.Process.Kill()
}

// TestShimChildDiesWithKilledParent: a program started through
// the shim is killed by the kernel when the process that started it is
// killed with SIGKILL, which runs no code of the parent's.
func TestShimChildDiesWithKilledParent(t *testing.T) {
	dir := t.TempDir()
	fakeBinaryDir(t, dir)
	parent := exec.Command(os.Args[0], "-test.run=^TestShimHelperParent$", "-test.v")
	parent.Env = append(os.Environ(), shimHelperEnv+"="+dir)
	stdin, err := parent.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = parent.Process.Kill(); _ = parent.Wait() }()
	pids := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var pid int
			if _, err := fmt.Sscanf(sc.Text(), "child %d", &pid); err == nil {
				pids <- pid
			}
		}
	}()
	var pid int
	select {
	case pid = <-pids:
	case <-time.After(30 * time.Second):
		t.Fatal("the helper parent did not start its child")
	}
	// The shim execs the real program in the same process, under the
	// link's name.
	want := filepath.Join(dir, shimFolder, EtcdBinary)
	var child Process
	err = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		child, err = ReadProcess(pid)
		if err != nil {
			return false, err
		}
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		return strings.HasSuffix(exe, "/sleep") && len(child.Cmdline) == 2 && child.Cmdline[0] == want && child.Cmdline[1] == "300", nil
	})
	if err != nil {
		t.Fatalf("the child does not run the real program (sleep) as %s 300: %v (last seen %+v)", want, err, child)
	}

	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	err = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return !child.Running(), nil
	})
	if err != nil {
		_ = child.Kill(time.Second)
		t.Fatalf("the child %s still runs after its parent was killed", child)
	}
}

// TestShimRefusesAnotherParent: a shim whose parent is not the
// process named in its configuration (the owner died before the shim could
// ask for the signal) does not start the program.
func TestShimRefusesAnotherParent(t *testing.T) {
	dir := t.TempDir()
	links, err := writeShims(dir, fakeBinaryDir(t, dir), 1)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(links[EtcdBinary], "300").CombinedOutput()
	if err == nil {
		t.Fatalf("the shim started its program for a parent that is not its owner; output:\n%s", out)
	}
	if !strings.Contains(string(out), "not starting etcd") {
		t.Errorf("output does not say why:\n%s", out)
	}
}
