package prometheus

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// TestFallbackWhileThePrometheusIsDown is V12 end to end: a workload whose
// trigger reads the remote Prometheus runs at the count its value asks for;
// with Prometheus stopped the trigger fails on every tick, and after more
// than failureThreshold failures in a row the workload moves to the
// fallback count, with the Fallback condition, each trigger's health in
// kubectl get scalings and a FallbackActive Warning; with Prometheus back
// the trigger succeeds, the fallback ends (a FallbackEnded event) and the
// count follows the value again.
func TestFallbackWhileThePrometheusIsDown(t *testing.T) {
	e := start(t)
	ns := cluster.Namespace(t)
	ex := framework.NewExporter(t, 0)
	ex.SetQueue(35)
	if err := e.prom.SetTargets([]framework.PrometheusTarget{{
		Targets: []string{ex.Addr()},
		Labels:  map[string]string{"namespace": ns, "job": "orders-exporter"},
	}}); err != nil {
		t.Fatal(err)
	}
	rackedCluster(t, ns, "orders", 1, map[string]any{
		"minReplicas": int64(1), "maxReplicas": int64(8),
		"triggers": []any{map[string]any{"name": "backlog", "type": "AverageValue", "threshold": float64(10),
			"query": `sum(queue_messages{namespace="${namespace}",job="${name}-exporter"})`}},
		"fallback": map[string]any{"failureThreshold": int64(2), "replicas": int64(6)},
		// No scale-down window, so the count leaves the fallback as soon
		// as the trigger is back.
		"behavior": map[string]any{"scaleDown": map[string]any{"stabilizationWindowSeconds": int64(0)}},
	})
	// 35 messages at 10 per replica: 4.
	framework.WaitScale(t, cluster, ns, "orders", "4", func(r int64) bool { return r == 4 })

	scaling := autoscaler.ScalingName("orders", schema.GroupKind{Group: "samples.scaleplane.io", Kind: "RackedCluster"})
	status := func(ctx context.Context) string {
		out, err := cluster.Kubectl(ctx, "get", "scalings", "-n", ns, scaling, "-o",
			`jsonpath={.status.conditions[?(@.type=="Fallback")].status}/{.status.conditions[?(@.type=="Fallback")].reason} {.status.triggers[0].health} {.status.triggers[0].fallback}`)
		if err != nil {
			return err.Error()
		}
		return out
	}

	e.prom.Stop()
	framework.WaitScale(t, cluster, ns, "orders", "the fallback count 6", func(r int64) bool { return r == 6 })
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		got := status(ctx)
		return got == "True/FallbackActive Failing true", fmt.Sprintf("Scaling %s: %q, want the Fallback condition and a failing trigger in fallback", scaling, got)
	})
	findEvent(t, ns, "orders", v1alpha1.ReasonFallbackActive, "trigger backlog failed more than 2 times in a row: it stands for the fallback count 6 (behavior static)")
	table, err := cluster.Kubectl(context.Background(), "get", "scalings", "-n", ns, scaling)
	if err != nil || !strings.Contains(table, "FALLBACK") {
		t.Errorf("kubectl get scalings has no FALLBACK column: %v\n%s", err, table)
	}

	if err := e.prom.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	framework.WaitScale(t, cluster, ns, "orders", "4 again", func(r int64) bool { return r == 4 })
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		got := status(ctx)
		return strings.HasPrefix(got, "False/TriggersHealthy Happy"), fmt.Sprintf("Scaling %s: %q, want the fallback ended and the trigger healthy", scaling, got)
	})
	findEvent(t, ns, "orders", v1alpha1.ReasonFallbackEnded, "every trigger succeeded again")
}
