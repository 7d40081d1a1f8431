package controlplane

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// Names of the control-plane programs in the binary folder.
const (
	EtcdBinary                  = "etcd"
	APIServerBinary             = "kube-apiserver"
	ControllerManagerBinary     = "kube-controller-manager"
	KubectlBinary               = "kubectl"
	defaultBinaryFolderFromRoot = "bin/controlplane"
)

// RepoRoot is the repository's top folder, found from this source file so
// tests work from any package directory.
func RepoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("framework: cannot locate its own source file")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// BinaryDir is where the control-plane programs are: KUBEBUILDER_ASSETS when
// set (users who already have envtest binaries), else bin/controlplane.
func BinaryDir() string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	return filepath.Join(RepoRoot(), defaultBinaryFolderFromRoot)
}

// CheckBinaries reports which required programs are missing, with the
// command that builds them.
func CheckBinaries(names ...string) error {
	dir := BinaryDir()
	var missing []string
	for _, name := range names {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("control-plane programs %v not found in %s: run `make tools` to build them (minutes, once), or set KUBEBUILDER_ASSETS to a folder that has them", missing, dir)
	}
	return nil
}

// Binary is the full path of one control-plane program.
func Binary(name string) string { return filepath.Join(BinaryDir(), name) }
