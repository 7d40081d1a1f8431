package keda

import (
	"context"
	"fmt"
	"testing"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

// externalTrigger is a KEDA trigger of type typ asking scaleplane for
// requests per second over the target's pods, 10 per replica.
func externalTrigger(typ, addr string) string {
	return fmt.Sprintf(`
  - type: %s
    metadata:
      scalerAddress: %s
      query: sum(rate(http_requests_total{namespace="${namespace}",job="${name}"}[5s]))
      threshold: "10"
      activationThreshold: "1"`, typ, addr)
}

// Pull: KEDA's ScaledObject with a trigger of type
// external names scaleplane and a PromQL query. scaleplane scrapes the
// target's pods into its embedded store as it would for its own trigger,
// KEDA's HPA reads the value through KEDA's metrics server (GetMetricSpec,
// GetMetrics) and scales through /scale; the racks follow (C1).
func TestExternalScaler(t *testing.T) {
	e := start(t)
	ns := cluster.Namespace(t)
	ex := framework.NewExporter(t, 45)
	framework.AddPod(t, cluster, ns, "api-a-0", map[string]string{"samples.scaleplane.io/cluster": "api", "samples.scaleplane.io/rack": "a"}, ex)
	apply(t, ns, rackedCluster("api", 1, ""))
	apply(t, ns, scaledObject("api", "api", 1, 10, externalTrigger("external", e.externalScaler)))

	// 45 requests/s at 10 per replica: 5 (4 or 6 when rate()'s
	// extrapolation over 1 s scrapes lands across a boundary).
	framework.WaitScale(t, cluster, ns, "api", "4..6", func(r int64) bool { return r >= 4 && r <= 6 })
	h := waitHPA(t, ns, kedas("api"))
	if got := h.Spec.Metrics[0].External.Metric.Name; got != "s0-scaleplane" {
		t.Errorf("KEDA's HPA metric %q, want s0-scaleplane (scaleplane's metric name, KEDA's index)", got)
	}
	ex.SetRate(5)
	framework.WaitScale(t, cluster, ns, "api", "1", exactly(1))
}

// Push: with external-push KEDA keeps a StreamIsActive
// stream open. At zero requests the workload is inactive and KEDA keeps it
// at zero (minReplicaCount 0); when requests arrive scaleplane's stream
// says active, KEDA wakes it, and its HPA scales on GetMetrics.
func TestExternalPushScaler(t *testing.T) {
	e := start(t)
	ns := cluster.Namespace(t)
	ex := framework.NewExporter(t, 0)
	framework.AddPod(t, cluster, ns, "fn-a-0", map[string]string{"samples.scaleplane.io/cluster": "fn", "samples.scaleplane.io/rack": "a"}, ex)
	apply(t, ns, rackedCluster("fn", 0, ""))
	apply(t, ns, scaledObject("fn", "fn", 0, 10, externalTrigger("external-push", e.externalScaler)))

	soCondition(t, ns, "fn", "Active", "False")
	if s, err := framework.GetScale(context.Background(), cluster, ns, "fn"); err != nil || s.Replicas != 0 {
		t.Fatalf("inactive workload: %+v (%v), want replicas 0", s, err)
	}
	ex.SetRate(45)
	soCondition(t, ns, "fn", "Active", "True")
	framework.WaitScale(t, cluster, ns, "fn", "4..6", func(r int64) bool { return r >= 4 && r <= 6 })
}
