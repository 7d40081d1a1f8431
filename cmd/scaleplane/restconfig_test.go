package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestKubeconfigFlagIsNotRateLimited: --kubeconfig must give the manager
// the same client as a pod or $KUBECONFIG (controller-runtime's GetConfig,
// QPS -1), not client-go's default of 5 requests/s, under which the
// controllers of a busy cluster fall behind.
func TestKubeconfigFlagIsNotRateLimited(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	const kubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFlag, err := restConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", path)
	fromEnv, err := restConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if fromFlag.QPS != fromEnv.QPS || fromFlag.Burst != fromEnv.Burst {
		t.Errorf("--kubeconfig gives QPS %v burst %d, $KUBECONFIG gives QPS %v burst %d", fromFlag.QPS, fromFlag.Burst, fromEnv.QPS, fromEnv.Burst)
	}
	if fromFlag.QPS >= 0 {
		t.Errorf("--kubeconfig gives QPS %v, want client-side rate limiting off (< 0)", fromFlag.QPS)
	}
}
