package controllers

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/scaleplane/scaleplane/config"
	"github.com/scaleplane/scaleplane/profile"
)

// limitedRackView is the RackedCluster profile against its CRD with issue
// 12's limits added: the scale config's bounds have a minimum of 1.
func limitedRackView(t *testing.T) *profile.Compiled {
	t.Helper()
	crds, err := config.SampleCRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if crd.Spec.Names.Kind != "RackedCluster" {
			continue
		}
		one := float64(1)
		cfg := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["scaleConfig"]
		for _, b := range []string{"minReplicas", "maxReplicas"} {
			p := cfg.Properties[b]
			p.Minimum = &one
			cfg.Properties[b] = p
		}
		crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["scaleConfig"] = cfg
		v, err := sampleView(t, "RackedCluster").WithCRD(crd)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	t.Fatal("no RackedCluster CRD among the samples")
	return nil
}

// C6: a fan-out the schema refuses is never sent, and says so once.
func TestC6FanOutNeverSendsWhatTheSchemaRefuses(t *testing.T) {
	// Stored before the schema had its minimum, or written past scaleplane:
	// pinned at 3, replicas 0.
	obj := rc("demo").replicas(0).rack("a", 3).config(map[string]interface{}{"minReplicas": int64(3), "maxReplicas": int64(3)}).obj()
	obj.SetResourceVersion("")
	var patches atomic.Int32
	funcs := interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patches.Add(1)
			return c.Patch(ctx, o, patch, opts...)
		},
	}
	r, _, events := fakeReconciler(t, "RackedCluster", funcs, obj)
	r.view = limitedRackView(t)
	for range 50 {
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	if n := patches.Load(); n != 0 {
		t.Errorf("%d workload patches, want 0: the schema refuses the pin at 0", n)
	}
	got := drain(events)
	if len(got) != 1 || !strings.HasPrefix(got[0], "Warning WriteFailed replicas not fanned out: spec.scaleConfig.minReplicas: Invalid value: 0: the CRD's schema requires a value of at least 1 (minimum)") {
		t.Errorf("events = %q, want one Warning naming the schema's minimum", got)
	}
}

// C6: a write the API server refuses anyway (a CEL rule, a webhook) is one
// Warning with the server's message and a capped exponential backoff: over
// many reconciles (the operator updating status, resyncs) the write is
// sent once per backoff step, never in a hot loop, and never half-applied.
func TestC6RefusedWriteBacksOff(t *testing.T) {
	obj := rc("demo").replicas(5).rack("a", 3).rack("b", 3).obj()
	obj.SetResourceVersion("")
	refusal := apierrors.NewInvalid(schema.GroupKind{Group: "samples.scaleplane.io", Kind: "RackedCluster"}, "demo",
		field.ErrorList{field.Invalid(field.NewPath("spec", "racks").Index(0).Child("members"), 5, "racks may grow by 1 at a time")})
	var patches atomic.Int32
	funcs := interceptor.Funcs{
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			patches.Add(1)
			return refusal
		},
	}
	r, c, events := fakeReconciler(t, "RackedCluster", funcs, obj)
	now := time.Unix(1_800_000_000, 0)
	r.refused.now = func() time.Time { return now }
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)}

	var delays []time.Duration
	// 2000 reconciles, one simulated second apart: a hot loop would send
	// 2000 writes.
	for range 2000 {
		res, err := r.Reconcile(context.Background(), req)
		if err != nil {
			t.Fatalf("Reconcile error = %v; a refused write is held, not returned for the rate limiter", err)
		}
		if res.RequeueAfter <= 0 {
			t.Fatalf("Reconcile result %+v: a refused write must come back after its backoff", res)
		}
		if int(patches.Load()) > len(delays) {
			delays = append(delays, res.RequeueAfter)
		}
		now = now.Add(time.Second)
	}
	// 1+2+4+...+256 s = 511 s, then every 300 s: 9 + (2000-511)/300 = 13.
	wantDelays := []time.Duration{1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300, 300, 300}
	for i := range wantDelays {
		wantDelays[i] *= time.Second
	}
	if diff := cmp.Diff(wantDelays, delays); diff != "" {
		t.Errorf("backoff after each refused write (-want +got):\n%s", diff)
	}
	got := drain(events)
	want := []string{"Warning WriteFailed the API server refused the fan-out: " + refusal.ErrStatus.Message}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// Never half-applied: the object is as it was.
	u := rc("").obj()
	if err := c.Get(context.Background(), req.NamespacedName, u); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(obj.Object["spec"], u.Object["spec"]); diff != "" {
		t.Errorf("spec after refused writes (-want +got):\n%s", diff)
	}

	// A new spec (generation) is a new write: tried at once.
	u.SetGeneration(u.GetGeneration() + 1)
	_ = c.Update(context.Background(), u)
	before := patches.Load()
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if patches.Load() != before+1 {
		t.Errorf("a new generation did not retry the write at once")
	}
}
