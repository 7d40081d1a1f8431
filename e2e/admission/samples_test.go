package admission

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

// TestSamplesPassAdmission applies every sample in
// config/samples with kubectl through scaleplane's webhooks: each valid one
// is admitted without a warning it does not mean to show, the autoscaling
// sample starts at zero with every rack at zero (M4, M5) and its triggers
// kept, and the invalid one is refused with its field paths.
func TestSamplesPassAdmission(t *testing.T) {
	ns := namespace(t)
	dir := filepath.Join(framework.RepoRoot(), "config", "samples")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for _, f := range files {
		name := filepath.Base(f)
		if name == "kustomization.yaml" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		out, err := cluster.Kubectl(ctx, "apply", "-n", ns, "-f", f)
		cancel()
		if name == "invalid-rackedcluster.yaml" {
			if err == nil || !strings.Contains(out+err.Error(), "spec.scaleConfig.minReplicas") || !strings.Contains(out+err.Error(), "spec.racks[1].name") {
				t.Errorf("%s was not refused with its field paths: %v\n%s", name, err, out)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s refused: %v\n%s", name, err, out)
			continue
		}
		applied++
	}
	if applied < 5 {
		t.Fatalf("applied %d samples, want at least 5 (is rackedcluster-promql.yaml there?)", applied)
	}
	web := get(t, "RackedCluster", ns, "web")
	wantFields(t, web, map[string]interface{}{
		"spec.replicas":                        i64(0),
		"spec.scaleConfig.minReplicas":         i64(0),
		"spec.scaleConfig.maxReplicas":         i64(6),
		"spec.scaleConfig.idle.timeoutSeconds": i64(30),
	})
	if got := groupSizes(web, "spec.racks", "members"); len(got) != 3 || got[0] != i64(0) || got[1] != i64(0) || got[2] != i64(0) {
		t.Errorf("racks of web: members %v, want 0 0 0", got)
	}
	triggers, _ := field(web, "spec.scaleConfig.triggers").([]interface{})
	if len(triggers) != 1 || !strings.Contains(triggers[0].(map[string]interface{})["query"].(string), `job="${name}"`) {
		t.Errorf("web's triggers were not kept as written: %v", triggers)
	}
}
