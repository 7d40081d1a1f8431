package foundation

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

// TestKustomizeDefaultServerDryRun renders config/default, the samples
// overlay and the sample objects with kubectl's built-in kustomize and has
// the real API server validate every object.
func TestKustomizeDefaultServerDryRun(t *testing.T) {
	ctx := context.Background()
	// A server-side dry run does not create the Namespace, and the namespaced
	// objects are checked against it, so it must exist already.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "scaleplane-system"}}
	if err := cluster.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace: %v", err)
	}
	// config/default installs scaleplane only; samples/deploy adds the
	// sample CRDs and profiles; samples are the sample objects.
	for _, overlay := range []string{"default", "samples/deploy", "samples"} {
		t.Run(overlay, func(t *testing.T) {
			rendered, err := cluster.Kubectl(ctx, "kustomize", filepath.Join(framework.RepoRoot(), "config", overlay))
			if err != nil {
				t.Fatalf("render config/%s: %v", overlay, err)
			}
			if strings.Count(rendered, "\nkind: ")+1 < 2 {
				t.Fatalf("config/%s rendered almost nothing:\n%s", overlay, rendered)
			}
			args := []string{"apply", "--dry-run=server", "-f", "-"}
			if overlay == "samples" {
				args = append(args, "--namespace", cluster.Namespace(t))
			}
			out, err := cluster.KubectlWithInput(ctx, rendered, args...)
			if err != nil {
				t.Fatalf("server dry run of config/%s refused: %v\n%s", overlay, err, out)
			}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if !strings.Contains(line, "(server dry run)") {
					t.Errorf("unexpected kubectl output line %q", line)
				}
			}
		})
	}
}
