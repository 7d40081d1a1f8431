package autoscaler

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/scaling"
)

// cacheOf is a client.Reader over a few unstructured objects.
type cacheOf map[types.NamespacedName]*unstructured.Unstructured

func (s cacheOf) Get(_ context.Context, nn types.NamespacedName, obj client.Object, _ ...client.GetOption) error {
	u, ok := s[nn]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "rackedclusters"}, nn.Name)
	}
	u.DeepCopyInto(obj.(*unstructured.Unstructured))
	return nil
}

func (s cacheOf) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// A workload waking from zero waits for its dependency, records activity
// for it and queues its tick at once, so the dependency wakes first.
func TestWakeWaitsForDependencies(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	a := newTestAutoscaler(t, now)
	k := a.byResource["rackedclusters"]
	db := rackedCluster("shop", "db", 0, nil)
	e := &env{cache: cacheOf{{Namespace: "shop", Name: "db"}: db}}

	c := cfg(0, 4).idle(1, 60).obj()
	c.DependsOn = []string{"db", "cache"}
	app := k.get(types.NamespacedName{Namespace: "shop", Name: "app"})
	app.recordActivity(now.Add(-time.Second))
	d := k.decide(context.Background(), e, app, scaling.Workload{Replicas: ptr(int32(0)), Config: c}, now, app.lastActivity())
	k.signalDependencies("shop", d)

	type outcome struct {
		Action      scaling.ScaleAction
		Desired     int32
		Reason      string
		DBActivity  time.Time
		DBQueued    bool
		WakeUpsSent int
	}
	dbState := k.lookup("shop", "db")
	got := outcome{d.Action, d.Desired, d.Reason, dbState.lastActivity(), dbState.pending.Load(), len(k.wake)}
	want := outcome{
		Action: scaling.ActionWait, Desired: 0,
		Reason:     "Wait at 0: dependencies not ready: db, cache; waking db; missing cache",
		DBActivity: now, DBQueued: true,
		// db and cache: both get activity and a queued tick (cache may be
		// created later; its tick then finds nothing).
		WakeUpsSent: 2,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// Workloads that depend on each other at zero cannot wait for one another:
// each would wait for the other to be ready forever, queueing the other's
// tick at once on every tick. A dependency whose dependsOn leads back to
// the waking workload is woken beside it and not waited for.
func TestDependencyCycleWakesInsteadOfWaiting(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	a := newTestAutoscaler(t, now)
	k := a.byResource["rackedclusters"]
	withDeps := func(name string, deps ...any) *unstructured.Unstructured {
		u := rackedCluster("shop", name, 0, nil)
		_ = unstructured.SetNestedField(u.Object, map[string]any{"minReplicas": int64(0), "maxReplicas": int64(4),
			"idle": map[string]any{"replicasAtStart": int64(1), "timeoutSeconds": int64(60)}, "dependsOn": deps}, "spec", "scaleConfig")
		return u
	}
	e := &env{cache: cacheOf{
		{Namespace: "shop", Name: "db"}:    withDeps("db", "cache"),
		{Namespace: "shop", Name: "cache"}: withDeps("cache", "app"),
		{Namespace: "shop", Name: "other"}: withDeps("other"),
	}}
	c := cfg(0, 4).idle(1, 60).obj()
	c.DependsOn = []string{"db", "other"}
	app := k.get(types.NamespacedName{Namespace: "shop", Name: "app"})
	app.recordActivity(now.Add(-time.Second))
	d := k.decide(context.Background(), e, app, scaling.Workload{Replicas: ptr(int32(0)), Config: c}, now, app.lastActivity())
	if d.Action != scaling.ActionWakeUp && d.Action != scaling.ActionWait {
		t.Fatalf("action %s (%s)", d.Action, d.Reason)
	}
	// db leads back to app (db -> cache -> app): not waited for; other
	// does not: waited for.
	if d.Dependencies == nil || !cmp.Equal(d.Dependencies.NotReady, []string{"other"}) || !cmp.Equal(d.Dependencies.Wake, []string{"db", "other"}) {
		t.Errorf("dependencies %+v; want db and other woken, only other waited for (%s)", d.Dependencies, d.Reason)
	}
}
