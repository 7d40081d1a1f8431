package embedders

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
)

// TestKindRuntime: a kind's controller is started on a running
// manager, stopped (its unstructured informer removed), and started again
// under the same name, with no restart: the seam live ScaleProfiles
// activate kinds through.
func TestKindRuntime(t *testing.T) {
	var log *informerLog
	mgr, err := ctrl.NewManager(cluster.Config, ctrl.Options{
		Scheme:                 cluster.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		NewCache: func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
			c, err := cache.New(cfg, opts)
			log = &informerLog{Cache: c}
			return log, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := startManager(t, mgr)
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	// The sample profile as written, /scale paths included: nothing
	// resolves them from the CRD here.
	view, err := profile.Compile(profile.Samples()[2])
	if err != nil {
		t.Fatal(err)
	}
	ns := cluster.Namespace(t)
	create := func(name string) *unstructured.Unstructured {
		wg := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
			"replicas": int64(2), "scalePolicy": map[string]any{"minReplicas": int64(2), "maxReplicas": int64(2)},
		}}}
		wg.SetGroupVersionKind(workerGroupGVK)
		wg.SetNamespace(ns)
		wg.SetName(name)
		// Webhooks of earlier tests may linger in the API server a moment.
		framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
			if err := cluster.Client.Create(ctx, wg.DeepCopy()); err != nil {
				return false, err.Error()
			}
			return true, ""
		})
		return wg
	}
	selected := func(wg *unstructured.Unstructured) {
		t.Helper()
		want := "samples.scaleplane.io/role=leader,samples.scaleplane.io/workergroup=" + wg.GetName()
		framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(workerGroupGVK)
			if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(wg), got); err != nil {
				return false, err.Error()
			}
			sel, _, _ := unstructured.NestedString(got.Object, "status", "hpaPodSelector")
			return sel == want, fmt.Sprintf("%s: status.hpaPodSelector %q, want %q", wg.GetName(), sel, want)
		})
	}

	first, err := controllers.NewKindRuntime(mgr, view, controllers.Options{Owner: "runtime", KEDADiscoveryInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(ctx); err != nil {
		t.Fatal(err)
	}
	selected(create("a"))
	stopCtx, stopCancel := context.WithTimeout(ctx, time.Minute)
	defer stopCancel()
	if err := first.Stop(stopCtx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := first.Start(ctx); err == nil {
		t.Error("a stopped KindRuntime started again; want an error saying to build a new one")
	}
	if !slices.Contains(log.seen(), "remove *unstructured.Unstructured WorkerGroup") {
		t.Errorf("the kind's informer was not removed; the cache saw %v", log.seen())
	}

	// Activated again, under the same controller name and HPA index.
	second, err := controllers.NewKindRuntime(mgr, view, controllers.Options{Owner: "runtime", KEDADiscoveryInterval: -1})
	if err != nil {
		t.Fatalf("activate again: %v", err)
	}
	if err := second.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = second.Stop(context.Background()) })
	selected(create("b"))
}
