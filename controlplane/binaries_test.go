package controlplane

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestBinaryDir: the programs are found from the environment
// first, so an operator's tests run from the module cache, where no
// checkout's bin/ exists.
func TestBinaryDir(t *testing.T) {
	tests := []struct {
		name, dir, assets, want string
	}{
		{"scaleplane's folder wins", "/opt/scaleplane", "/opt/envtest", "/opt/scaleplane"},
		{"envtest's assets", "", "/opt/envtest", "/opt/envtest"},
		{"the checkout", "", "", filepath.Join(RepoRoot(), "bin", "controlplane")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(DirEnv, tc.dir)
			t.Setenv(AssetsEnv, tc.assets)
			if got := BinaryDir(); got != tc.want {
				t.Errorf("BinaryDir() = %q, want %q", got, tc.want)
			}
		})
	}
	t.Setenv(DirEnv, t.TempDir())
	err := CheckBinaries(EtcdBinary)
	if err == nil || !strings.Contains(err.Error(), DirEnv) || !strings.Contains(err.Error(), AssetsEnv) {
		t.Errorf("missing programs: %v, want an error naming %s and %s", err, DirEnv, AssetsEnv)
	}
}
