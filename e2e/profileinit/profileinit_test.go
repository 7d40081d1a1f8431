// Package profileinit_test proves `scaleplane profile init` (issue 12 item
// 1) against a real API server and the real kubectl: for every
// third-party-shaped CRD of cmd/scaleplane/testdata/profileinit installed
// in the cluster, `profile init --crd NAME` prints what the golden file of
// its CRD file holds, and the output applies as is with
// `kubectl apply --server-side --dry-run=server` (the ScaleProfile CRD
// installed).
package profileinit_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

var cluster *framework.Cluster

func testdata() string {
	return filepath.Join(framework.RepoRoot(), "cmd", "scaleplane", "testdata", "profileinit")
}

func TestMain(m *testing.M) {
	log.SetLogger(logr.Discard())
	os.Exit(framework.Run(m, framework.Options{
		CRDPaths: []string{filepath.Join(framework.RepoRoot(), "config", "crd", "bases"), testdata()},
	}, &cluster))
}

func TestIssue12Item1ProfileInitAppliesAsIs(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "scaleplane")
	build := exec.Command("go", "build", "-o", bin, "./cmd/scaleplane")
	build.Dir = framework.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build scaleplane: %v\n%s", err, out)
	}
	cases := map[string]string{
		"leaderworkersets.leaderworkerset.x-k8s.io": "leaderworkerset",
		"functions.serverless.example.org":          "function",
		"cassandraclusters.db.example.org":          "database",
		"workers.batch.example.org":                 "no-room",
		"edgepools.infra.example.org":               "cluster-scoped",
	}
	for crd, file := range cases {
		t.Run(crd, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "profile", "init", "--crd", crd, "--kubeconfig", cluster.Kubeconfig)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("profile init --crd %s: %v\n%s", crd, err, stderr.String())
			}
			golden, err := os.ReadFile(filepath.Join(testdata(), file+".golden"))
			if err != nil {
				t.Fatal(err)
			}
			// The golden file of the CRD file: a document per CRD, the
			// one for this CRD among them.
			want := strings.SplitN(string(golden), "# stdout:\n", 2)[1]
			if !strings.Contains(want, stdout.String()) {
				t.Errorf("profile init --crd %s printed\n%s\nwhich is not in %s.golden", crd, stdout.String(), file)
			}
			out, err := cluster.KubectlWithInput(ctx, stdout.String(), "apply", "--server-side", "--dry-run=server", "-f", "-")
			if err != nil {
				t.Fatalf("kubectl apply --server-side --dry-run=server: %v\n%s", err, out)
			}
			for _, w := range []string{"scaleprofile.scaleplane.io/" + crd + " serverside-applied (server dry run)", "clusterrole.rbac.authorization.k8s.io/scaleplane:" + crd + " serverside-applied (server dry run)"} {
				if !strings.Contains(out, w) {
					t.Errorf("kubectl apply said %q, want %q", out, w)
				}
			}
		})
	}
}
