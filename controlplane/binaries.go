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
	return filepath.Clean(filepath.Join(filepath.Dir(file), ".."))
}

// Environment variables naming the folder of the control-plane programs.
const (
	// DirEnv names a folder with etcd, kube-apiserver, kubectl (and
	// kube-controller-manager): what `make tools` builds into
	// bin/controlplane. It wins over KUBEBUILDER_ASSETS.
	DirEnv = "SCALEPLANE_CONTROLPLANE_DIR"
	// AssetsEnv is envtest's variable, for users who already have envtest
	// binaries (setup-envtest).
	AssetsEnv = "KUBEBUILDER_ASSETS"
)

// BinaryDir is where the control-plane programs are: SCALEPLANE_CONTROLPLANE_DIR
// when set, else KUBEBUILDER_ASSETS when set, else the checkout's
// bin/controlplane. From the module cache (an operator's tests importing
// this package) there is no checkout to build in: set one of the two.
func BinaryDir() string {
	for _, env := range []string{DirEnv, AssetsEnv} {
		if dir := os.Getenv(env); dir != "" {
			return dir
		}
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
		return fmt.Errorf("control-plane programs %v not found in %s: run `make tools` in a scaleplane checkout to build them (about 11 minutes the first time) and set %s to its bin/controlplane, or set %s to a folder of envtest binaries", missing, dir, DirEnv, AssetsEnv)
	}
	return nil
}

// Binary is the full path of one control-plane program.
func Binary(name string) string { return filepath.Join(BinaryDir(), name) }
