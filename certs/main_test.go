package certs

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// testCfg is the envtest API server shared by this package's cluster tests;
// nil when the control-plane binaries are absent (see skipReason).
var (
	testCfg    *rest.Config
	skipReason string
)

// assetsDir is where the control-plane binaries live: KUBEBUILDER_ASSETS or
// the repository's bin/controlplane, which `make tools` fills.
func assetsDir() string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	abs, _ := filepath.Abs(filepath.Join("..", "bin", "controlplane"))
	return abs
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir := assetsDir()
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			skipReason = fmt.Sprintf("control plane binary %s not found in %s (build them with `make tools` or set KUBEBUILDER_ASSETS)", bin, dir)
			return m.Run()
		}
	}
	// As controlplane: a loaded machine (CI builds beside the tests)
	// can take well over envtest's default 20 s to start kube-apiserver.
	env := &envtest.Environment{BinaryAssetsDirectory: dir, ControlPlaneStartTimeout: 90 * time.Second, ControlPlaneStopTimeout: 30 * time.Second}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "start envtest: %v\n", err)
		return 1
	}
	testCfg = cfg
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop envtest: %v\n", err)
		}
	}()
	return m.Run()
}

// needCluster skips a test that needs an API server when none could start.
func needCluster(t *testing.T) *rest.Config {
	t.Helper()
	if testCfg == nil {
		t.Skip(skipReason)
	}
	return testCfg
}
