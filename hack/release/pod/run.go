// Package pod runs a container image the way a kubelet and an OCI runtime
// run a pod's container, with Linux primitives and no container engine: the
// image's layers unpacked into a root file system, a private mount
// namespace (CLONE_NEWNS) in which the pod's volumes are bind-mounted at
// their paths (read-only where the pod says so), /proc, /dev and /etc/hosts
// as a runtime provides them, the root remounted read-only for
// readOnlyRootFilesystem, chroot, no new privileges, the pod's user and
// group, and the image's entrypoint exec'ed with the container's arguments
// and environment.
//
// It shares the host's network (so the process reaches the API server on
// 127.0.0.1), PID and IPC namespaces, and sets no cgroup limits or seccomp
// profile: it proves what the image and the pod spec give the binary, not
// isolation. It needs root (mount, chroot, setuid): CI runs as root.
//
// The child is this very executable re-run with an environment variable;
// a test binary's TestMain must call Init first thing, as docker's reexec
// package does, because Go cannot run code between fork and exec.
package pod

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// initEnv carries the Spec to the re-executed child.
const initEnv = "SCALEPLANE_POD_INIT_SPEC"

// ExitExecFailed is the child's exit code when the entrypoint cannot be
// executed (missing, not executable), as shells and runtimes use 127.
const ExitExecFailed = 127

// Spec is one container to run.
type Spec struct {
	// RootFS is the unpacked image (see Unpack); it is modified (mount
	// points are created in it), so it must be a copy the caller owns.
	RootFS string
	// Argv is the command: the entrypoint and its arguments.
	Argv []string
	// Env is the whole environment (NAME=value).
	Env []string
	// WorkingDir inside the container; default /.
	WorkingDir string
	// UID and GID the process runs as.
	UID, GID uint32
	// ReadOnlyRoot remounts the root file system read-only after the
	// volumes are in place (readOnlyRootFilesystem).
	ReadOnlyRoot bool
	// Mounts are the volumes: host directories or files bind-mounted.
	Mounts []Mount
	// Hostname written to /etc/hosts and HOSTNAME.
	Hostname string
}

// Mount bind-mounts Source (a host path) at Target in the container.
type Mount struct {
	Source   string
	Target   string
	ReadOnly bool
}

// Command returns the command that runs spec: this executable re-run as
// the container's init in a new mount namespace. Set Stdout and Stderr,
// then Start it.
func Command(spec Spec) (*exec.Cmd, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("running an image as a pod needs root (mount namespaces, bind mounts, chroot, setuid); CI runs as root")
	}
	if len(spec.Argv) == 0 {
		return nil, errors.New("the container has no command: the image has no entrypoint and the pod gives no command")
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = []string{initEnv + "=" + string(data)}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS,
		// The container dies with the test binary, like a pod with its
		// node, and gets a process group of its own.
		Pdeathsig: syscall.SIGKILL,
		Setpgid:   true,
	}
	return cmd, nil
}

// Init runs the container if this process is a child Command started;
// otherwise it returns at once. Call it first in TestMain.
func Init() {
	data, ok := os.LookupEnv(initEnv)
	if !ok {
		return
	}
	var spec Spec
	if err := json.Unmarshal([]byte(data), &spec); err != nil {
		fail(1, "decode the container spec: %v", err)
	}
	if err := setup(spec); err != nil {
		fail(1, "set up the container: %v", err)
	}
	path, err := lookPath(spec.Argv[0], spec.Env)
	if err != nil {
		fail(ExitExecFailed, "exec %q: %v", spec.Argv[0], err)
	}
	err = unix.Exec(path, spec.Argv, spec.Env)
	fail(ExitExecFailed, "exec %q: %v", spec.Argv[0], err)
}

// fail reports what a runtime reports when a container cannot start.
func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pod: "+format+"\n", args...)
	os.Exit(code)
}

func setup(s Spec) error {
	root, err := filepath.Abs(s.RootFS)
	if err != nil {
		return err
	}
	// Nothing mounted here propagates to the host, and everything
	// disappears with the namespace when the process ends.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount(root, root, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind the root file system: %w", err)
	}
	// What a runtime provides in every container.
	if err := mountAt(root, "/proc", func(target string) error {
		return unix.Mount("proc", target, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	}, true); err != nil {
		return err
	}
	if err := mountAt(root, "/dev", func(target string) error {
		return unix.Mount("tmpfs", target, "tmpfs", unix.MS_NOSUID|unix.MS_STRICTATIME, "mode=755,size=65536k")
	}, true); err != nil {
		return err
	}
	for _, dev := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"} {
		if err := bind(root, Mount{Source: dev, Target: dev}); err != nil {
			return err
		}
	}
	hosts, err := os.CreateTemp("", "pod-hosts-")
	if err != nil {
		return err
	}
	fmt.Fprintf(hosts, "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.0.1\t%s\n", s.Hostname)
	hosts.Close()
	if err := os.Chmod(hosts.Name(), 0o644); err != nil {
		return err
	}
	if err := bind(root, Mount{Source: hosts.Name(), Target: "/etc/hosts", ReadOnly: true}); err != nil {
		return err
	}
	for _, m := range s.Mounts {
		if err := bind(root, m); err != nil {
			return err
		}
	}
	if s.ReadOnlyRoot {
		// Only the root's own mount: the volumes under it keep their
		// modes, as with a runtime's readonly rootfs.
		if err := unix.Mount("", root, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("remount the root file system read-only: %w", err)
		}
	}
	if err := unix.Chroot(root); err != nil {
		return fmt.Errorf("chroot: %w", err)
	}
	wd := s.WorkingDir
	if wd == "" {
		wd = "/"
	}
	if err := unix.Chdir(wd); err != nil {
		return fmt.Errorf("working directory %s: %w", wd, err)
	}
	// allowPrivilegeEscalation: false; dropping to a non-root user below
	// clears every capability.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no new privileges: %w", err)
	}
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(int(s.GID)); err != nil {
		return fmt.Errorf("setgid %d: %w", s.GID, err)
	}
	if err := syscall.Setuid(int(s.UID)); err != nil {
		return fmt.Errorf("setuid %d: %w", s.UID, err)
	}
	// Changing credentials cleared the parent-death signal.
	return unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0)
}

// mountAt creates target under root (a directory, or a file when dir is
// false) and calls mount on it.
func mountAt(root, target string, mount func(string) error, dir bool) error {
	path := filepath.Join(root, target)
	if dir {
		if err := os.MkdirAll(path, 0o755); err != nil {
			return fmt.Errorf("mount point %s: %w", target, err)
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("mount point %s: %w", target, err)
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o644)
		if err != nil {
			return fmt.Errorf("mount point %s: %w", target, err)
		}
		f.Close()
	}
	if err := mount(path); err != nil {
		return fmt.Errorf("mount %s: %w", target, err)
	}
	return nil
}

// bind mounts m.Source at m.Target under root, read-only if asked (a
// bind mount takes its flags only from a remount).
func bind(root string, m Mount) error {
	st, err := os.Stat(m.Source)
	if err != nil {
		return fmt.Errorf("volume for %s: %w", m.Target, err)
	}
	return mountAt(root, m.Target, func(target string) error {
		if err := unix.Mount(m.Source, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return err
		}
		if !m.ReadOnly {
			return nil
		}
		return unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "")
	}, st.IsDir())
}

// lookPath resolves the command inside the (chrooted) container as a
// runtime does: an absolute or relative path is used as is, a bare name is
// searched in the container's PATH.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		st, err := os.Stat(name)
		if err != nil {
			return "", err
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s is not an executable file", name)
		}
		return name, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		candidate := filepath.Join(dir, name)
		if st, err := os.Stat(candidate); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return candidate, nil
		}
	}
	return "", fmt.Errorf("executable file not found in $PATH (%s)", path)
}
