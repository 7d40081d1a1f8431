package prometheus

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// TestFormulaOverTwoSources is V13 end to end: one trigger reads the
// embedded store (the workload's own pod, scraped by scaleplane), the
// other the real Prometheus; the count follows (local + remote) / 2 at 5
// per replica, as computed by hand, and the Scaling lists the formula's
// result and both inputs.
func TestFormulaOverTwoSources(t *testing.T) {
	e := start(t)
	ns := cluster.Namespace(t)
	local := framework.NewExporter(t, 0)
	local.SetQueue(30)
	framework.AddPod(t, cluster, ns, "mix-a-0", map[string]string{"samples.scaleplane.io/cluster": "mix", "samples.scaleplane.io/rack": "a"}, local)
	remote := framework.NewExporter(t, 0)
	remote.SetQueue(10)
	if err := e.prom.SetTargets([]framework.PrometheusTarget{{
		Targets: []string{remote.Addr()},
		Labels:  map[string]string{"namespace": ns, "job": "mix-remote"},
	}}); err != nil {
		t.Fatal(err)
	}
	rackedCluster(t, ns, "mix", 1, map[string]any{
		"minReplicas": int64(1), "maxReplicas": int64(10),
		"triggers": []any{
			map[string]any{"name": "local", "type": "AverageValue", "source": "promql", "threshold": float64(1000),
				"query": `sum(queue_messages{namespace="${namespace}"})`},
			map[string]any{"name": "remote", "type": "AverageValue", "source": "prometheus", "threshold": float64(1000),
				"query": `sum(queue_messages{namespace="${namespace}",job="mix-remote"})`},
		},
		"scalingModifiers": map[string]any{"formula": "(local + remote) / 2.0", "target": float64(5)},
		"behavior": map[string]any{
			"scaleDown": map[string]any{"stabilizationWindowSeconds": int64(0)},
			"scaleUp": map[string]any{"stabilizationWindowSeconds": int64(0), "policies": []any{
				map[string]any{"type": "Percent", "value": int64(1000), "periodSeconds": int64(1)},
			}},
		},
	})
	// (30 + 10) / 2 = 20 at 5 per replica: 4. The triggers' own
	// thresholds (1000) alone would ask for 1.
	framework.WaitScale(t, cluster, ns, "mix", "(30 + 10) / 2 / 5 = 4", func(r int64) bool { return r == 4 })
	remote.SetQueue(50)
	// (30 + 50) / 2 = 40: 8.
	framework.WaitScale(t, cluster, ns, "mix", "(30 + 50) / 2 / 5 = 8", func(r int64) bool { return r == 8 })

	scaling := autoscaler.ScalingName("mix", schema.GroupKind{Group: "samples.scaleplane.io", Kind: "RackedCluster"})
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		out, err := cluster.Kubectl(ctx, "get", "scalings", "-n", ns, scaling, "-o", `jsonpath={range .status.triggers[*]}{.name}={.value} {end}`)
		if err != nil {
			return false, err.Error()
		}
		return out == "scalingModifiers=40 local=30 remote=50 ", fmt.Sprintf("Scaling %s triggers: %q", scaling, out)
	})
}
