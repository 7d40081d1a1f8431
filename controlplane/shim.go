package controlplane

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// envtest starts etcd and kube-apiserver itself, with a SysProcAttr that
// only sets Setpgid, and stops them with SIGTERM to their process group
// from Stop. Nothing stops them when the process that started them is
// killed (kill -9, OOM): they would keep serving, with admin credentials on
// disk. So envtest is given, as the path of each program, a link to our own
// executable in the cluster's data folder. Started under that name, the
// executable is a shim: it asks the kernel for SIGKILL when its parent dies
// (PR_SET_PDEATHSIG, which execve keeps) and execs the real program in the
// same process. Every binary that links this package (scaleplane, the e2e
// test binaries) can serve as the shim, through init below.

const (
	// shimFolder, inside a cluster's data folder, holds the links.
	shimFolder = "bin"
	// shimConfigFile, next to the links, says where the real programs are
	// and which process may start them.
	shimConfigFile = "scaleplane-exec.json"
)

// shimmed are the programs envtest starts.
var shimmed = []string{EtcdBinary, APIServerBinary}

type shimConfig struct {
	// BinaryDir holds the real programs.
	BinaryDir string `json:"binaryDir"`
	// Parent is the process that starts them. A shim whose parent is
	// another process (its parent died before the shim could ask for the
	// signal, or someone ran the link by hand) stops instead.
	Parent int `json:"parent"`
}

func init() {
	// Cheap for every other start of a binary that links this package: its
	// name is not etcd or kube-apiserver. A program of that name without a
	// shim configuration next to it is left to run as itself.
	name := filepath.Base(os.Args[0])
	if !slices.Contains(shimmed, name) {
		return
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(os.Args[0]), shimConfigFile))
	if err != nil {
		return
	}
	os.Exit(runShim(name, data))
}

// runShim sets the parent-death signal and execs the real program; it
// returns only when that fails.
func runShim(name string, data []byte) int {
	var cfg shimConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "scaleplane shim for %s: read %s: %v\n", name, shimConfigFile, err)
		return 1
	}
	// The parent-death signal belongs to the calling thread and survives
	// execve only on the thread that calls it: prctl and exec must run on
	// the same thread.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "scaleplane shim for %s: set parent-death signal: %v\n", name, err)
		return 1
	}
	// A parent that died before prctl sends no signal; the program must
	// not start as an orphan.
	if ppid := os.Getppid(); ppid != cfg.Parent {
		fmt.Fprintf(os.Stderr, "scaleplane shim for %s: started by process %d, not by %d that owns this cluster (it may have exited); not starting %s\n", name, ppid, cfg.Parent, name)
		return 1
	}
	target := filepath.Join(cfg.BinaryDir, name)
	err := syscall.Exec(target, os.Args, os.Environ())
	fmt.Fprintf(os.Stderr, "scaleplane shim for %s: exec %s: %v\n", name, target, err)
	return 127
}

// writeShims makes the links in dir/bin and their configuration: the real
// programs are in binaryDir and only parent may start them. It returns the
// link of each shimmed program by name.
func writeShims(dir, binaryDir string, parent int) (map[string]string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable for the control-plane shim: %w", err)
	}
	if binaryDir, err = filepath.Abs(binaryDir); err != nil {
		return nil, err
	}
	folder := filepath.Join(dir, shimFolder)
	if err := os.MkdirAll(folder, 0o700); err != nil {
		return nil, fmt.Errorf("create shim folder: %w", err)
	}
	links := map[string]string{}
	for _, name := range shimmed {
		link := filepath.Join(folder, name)
		if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("replace shim link: %w", err)
		}
		if err := os.Symlink(self, link); err != nil {
			return nil, fmt.Errorf("create shim link: %w", err)
		}
		links[name] = link
	}
	data, err := json.Marshal(shimConfig{BinaryDir: binaryDir, Parent: parent})
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(filepath.Join(folder, shimConfigFile), data, 0o600); err != nil {
		return nil, fmt.Errorf("write shim configuration: %w", err)
	}
	return links, nil
}

// writeFileAtomic replaces path with data in one rename, so a reader never
// sees half a file.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() { _ = os.Remove(tmp) }() // a no-op after the rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
