package controllers_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// TestScale1000Workloads creates 1000 RackedClusters whose racks disagree
// with spec.replicas, every other one with an autoscaling range, and
// reports their racks ready; it waits until every one is reconciled
// (racks fanned out, status.replicas and selector written, an HPA where the
// config asks) and logs the time and this process's peak memory. It runs
// when SCALEPLANE_SCALE_TEST=1 (make bench sets it).
func TestScale1000Workloads(t *testing.T) {
	if os.Getenv("SCALEPLANE_SCALE_TEST") != "1" {
		t.Skip("set SCALEPLANE_SCALE_TEST=1 (make bench) to run the 1000-workload test")
	}
	const n, parallel = 1000, 16
	startManager(t, controllers.Options{MaxConcurrentReconciles: 8})
	ns := cluster.Namespace(t)
	ctx := context.Background()

	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := createScaleWorkload(ctx, ns, i); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	created := time.Since(start)

	// Listing 1000 objects is work for the same two cores the controllers
	// use; look at most once a second so the measurement measures them.
	var lastLook time.Time
	lastMsg := "not looked yet"
	framework.Eventually(t, 5*time.Minute, func(ctx context.Context) (bool, string) {
		if time.Since(lastLook) < time.Second {
			return false, lastMsg
		}
		lastLook = time.Now()
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("samples.scaleplane.io/v1alpha1")
		list.SetKind("RackedClusterList")
		if err := cluster.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		done := 0
		for i := range list.Items {
			u := &list.Items[i]
			r, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
			sr, _, _ := unstructured.NestedInt64(u.Object, "status", "replicas")
			sel, _, _ := unstructured.NestedString(u.Object, "status", "selector")
			if allEqual(members(u), r) && sr == r && sel != "" {
				done++
			}
		}
		var hpas autoscalingv2.HorizontalPodAutoscalerList
		if err := cluster.Client.List(ctx, &hpas, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		lastMsg = fmt.Sprintf("%d of %d workloads reconciled, %d of %d HPAs", done, n, len(hpas.Items), n/2)
		return done == n && len(hpas.Items) == n/2, lastMsg
	})
	total := time.Since(start)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("%d RackedClusters: created (and racks reported ready) in %s, all reconciled after %s; peak RSS (VmHWM) %s, Go heap in use %d MiB, Go sys %d MiB (this process: manager, clients and test)",
		n, created.Round(time.Millisecond), total.Round(time.Millisecond), vmHWM(), ms.HeapInuse>>20, ms.Sys>>20)
	t.Logf("controller counters for RackedCluster over the whole run: %s", scaleplaneCounters(t, "RackedCluster"))
}

// createScaleWorkload creates workload i with racks of 1 and replicas 3
// (so every one needs a fan-out), then reports its racks ready at 3 as
// its operator would. Odd ones have an autoscaling range around 3.
func createScaleWorkload(ctx context.Context, ns string, i int) error {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "samples.scaleplane.io/v1alpha1",
		"kind":       "RackedCluster",
		"metadata":   map[string]interface{}{"name": fmt.Sprintf("w%04d", i), "namespace": ns},
		"spec": map[string]interface{}{
			"replicas": int64(3),
			"racks": []interface{}{
				map[string]interface{}{"name": "a", "members": int64(1)},
				map[string]interface{}{"name": "b", "members": int64(1)},
			},
		},
	}}
	if i%2 == 1 {
		_ = unstructured.SetNestedField(u.Object, map[string]interface{}{
			"minReplicas": int64(3), "maxReplicas": int64(5),
			"metrics": []interface{}{map[string]interface{}{
				"type": "Resource",
				"resource": map[string]interface{}{
					"name": "cpu", "target": map[string]interface{}{"type": "Utilization", "averageUtilization": int64(50)},
				},
			}},
		}, "spec", "scaleConfig")
	}
	if err := cluster.Client.Create(ctx, u); err != nil {
		return fmt.Errorf("create %s: %w", u.GetName(), err)
	}
	ready := []interface{}{
		map[string]interface{}{"name": "a", "readyMembers": int64(3)},
		map[string]interface{}{"name": "b", "readyMembers": int64(3)},
	}
	patch := client.RawPatch("application/merge-patch+json", []byte(fmt.Sprintf(`{"status":{"racks":%s}}`, mustJSON(ready))))
	if err := cluster.Client.Status().Patch(ctx, u, patch); err != nil {
		return fmt.Errorf("report racks of %s ready: %w", u.GetName(), err)
	}
	return nil
}

func mustJSON(v []interface{}) string {
	var b strings.Builder
	b.WriteString("[")
	for i, r := range v {
		m := r.(map[string]interface{})
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name":%q,"readyMembers":%d}`, m["name"], m["readyMembers"])
	}
	b.WriteString("]")
	return b.String()
}

// vmHWM is the process's peak resident set size from /proc/self/status.
func vmHWM() string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// scaleplaneCounters sums scaleplane's metrics for kind from
// controller-runtime's registry, where the controllers register them.
func scaleplaneCounters(t *testing.T, kind string) string {
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "scaleplane_") {
			continue
		}
		var sum float64
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					sum += m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
		out = append(out, fmt.Sprintf("%s=%.0f", f.GetName(), sum))
	}
	return strings.Join(out, " ")
}
