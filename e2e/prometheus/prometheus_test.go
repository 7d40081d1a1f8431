package prometheus

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// backlog is the query of both workloads: the queue gauge of web's pods.
// Both stores label them alike: scaleplane's scraper gives the pods of a
// workload with a trigger on the embedded store job=<workload> (here web),
// and the test gives Prometheus' target the same labels.
const backlog = `sum(queue_messages{namespace="${namespace}",job="web"})`

// The same decisions from the embedded store and from a
// real Prometheus, side by side in one run. Prometheus scrapes web's pod,
// which scaleplane scrapes too; web's trigger reads the embedded store
// (source promql) and web-remote's, otherwise identical, reads Prometheus
// (source prometheus). The gauge steps 35, 72, 15, 0.5 give, at 10 per
// replica, 4, 8, 2 and then minReplicas 1.
//
// "The same decisions" means, precisely: the sequence of distinct values
// spec.replicas takes (recorded by a watch, so no value is missed) is the
// same for both workloads, and it is the one the HPA algorithm gives for
// the gauge steps. When each count was reached is not asserted (the two
// stores scrape at different instants, and the autoscaler ticks each
// workload on its own); the test logs the lag between the two.
func TestSameDecisionsFromTheEmbeddedStoreAndPrometheus(t *testing.T) {
	e := start(t)
	ns := cluster.Namespace(t)
	ex := framework.NewExporter(t, 0)
	ex.SetQueue(0)
	framework.AddPod(t, cluster, ns, "web-a-0", map[string]string{"samples.scaleplane.io/cluster": "web", "samples.scaleplane.io/rack": "a"}, ex)
	if err := e.prom.SetTargets([]framework.PrometheusTarget{{
		Targets: []string{ex.Addr()},
		Labels:  map[string]string{"namespace": ns, "job": "web", "pod": "web-a-0"},
	}}); err != nil {
		t.Fatal(err)
	}
	rec := record(t, ns)
	sc := func(source string) map[string]any {
		return map[string]any{
			"minReplicas": int64(1), "maxReplicas": int64(10),
			"triggers": []any{map[string]any{"name": "backlog", "type": "AverageValue", "source": source, "query": backlog, "threshold": float64(10)}},
			// No stabilization window, and a scale-up policy that allows
			// every step at once (the default's 4 pods per 15 s would make
			// 4 -> 8 go through 5 when the steps come quickly): each
			// step is one decision.
			"behavior": map[string]any{
				"scaleDown": map[string]any{"stabilizationWindowSeconds": int64(0)},
				"scaleUp": map[string]any{"stabilizationWindowSeconds": int64(0), "policies": []any{
					map[string]any{"type": "Percent", "value": int64(1000), "periodSeconds": int64(1)},
				}},
			},
		}
	}
	ex.SetQueue(0.5)
	rackedCluster(t, ns, "web", 1, sc("promql"))
	rackedCluster(t, ns, "web-remote", 1, sc("prometheus"))

	want := []int64{1}
	for _, step := range []struct {
		queue float64
		want  int64
	}{{35, 4}, {72, 8}, {15, 2}, {0.5, 1}} {
		ex.SetQueue(step.queue)
		want = append(want, step.want)
		for _, name := range []string{"web", "web-remote"} {
			framework.WaitScale(t, cluster, ns, name, fmt.Sprint(step.want), func(r int64) bool { return r == step.want })
		}
	}
	local, localAt := rec.trajectory("web")
	remote, remoteAt := rec.trajectory("web-remote")
	if diff := cmp.Diff(want, local); diff != "" {
		t.Errorf("replicas of web, from the embedded store (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(local, remote); diff != "" {
		t.Errorf("replicas from Prometheus (+) differ from those from the embedded store (-):\n%s", diff)
	}
	if len(localAt) == len(remoteAt) {
		var lags []string
		for i := 1; i < len(localAt); i++ {
			lags = append(lags, fmt.Sprintf("%d: %s", local[i], remoteAt[i].Sub(localAt[i]).Round(time.Millisecond)))
		}
		t.Logf("Prometheus' decision minus the embedded store's, per count: %s", strings.Join(lags, ", "))
	}
	// The remote workload's events name its values as the local one's do.
	for _, name := range []string{"web", "web-remote"} {
		findEvent(t, ns, name, v1alpha1.ReasonScaled, "Scaled up from 1 to 4: backlog=35 over 1 replica is 35 per replica, above the target 10: asks for ceil(35 / 10) = 4")
	}
}

// With autoscaler.prometheusURL set, a trigger naming no source is
// evaluated by that server, with its placeholders expanded.
func TestRemotePrometheusIsTheDefault(t *testing.T) {
	e := start(t)
	ns := cluster.Namespace(t)
	ex := framework.NewExporter(t, 0)
	ex.SetQueue(35)
	if err := e.prom.SetTargets([]framework.PrometheusTarget{{
		Targets: []string{ex.Addr()},
		Labels:  map[string]string{"namespace": ns, "job": "queue-exporter"},
	}}); err != nil {
		t.Fatal(err)
	}
	rackedCluster(t, ns, "queue", 1, map[string]any{
		"minReplicas": int64(1), "maxReplicas": int64(8),
		"triggers": []any{map[string]any{"name": "backlog", "type": "AverageValue", "threshold": float64(10),
			"query": `sum(queue_messages{namespace="${namespace}",job="${name}-exporter"})`}},
	})
	// 35 messages at 10 per replica: 4.
	framework.WaitScale(t, cluster, ns, "queue", "4", func(r int64) bool { return r == 4 })
	findEvent(t, ns, "queue", v1alpha1.ReasonScaled, "Scaled up from 1 to 4: backlog=35 over 1 replica is 35 per replica, above the target 10: asks for ceil(35 / 10) = 4")
}

// findEvent waits for an event about name with reason whose message starts
// with prefix.
func findEvent(t *testing.T, ns, name, reason, prefix string) {
	t.Helper()
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		notes, err := framework.EventNotes(ctx, cluster, ns, name, reason)
		if err != nil {
			return false, err.Error()
		}
		for _, n := range notes {
			if strings.HasPrefix(n, prefix) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no %s event about %s starting %q; seen %q", reason, name, prefix, notes)
	})
}
