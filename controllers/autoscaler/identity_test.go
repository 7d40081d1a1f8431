package autoscaler

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/scalings"
	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/status"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// otherGroup is a second API group with a kind named RackedCluster.
const otherGroup = "infra.example.com"

// twoGroupAutoscaler runs the sample RackedCluster and a RackedCluster of
// otherGroup side by side.
func twoGroupAutoscaler(t *testing.T, now time.Time) (*Autoscaler, *kindLoop, *kindLoop) {
	t.Helper()
	p := profile.Samples()[0]
	p.Target.APIVersion = otherGroup + "/v1"
	other, err := profile.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{Views: []*profile.Compiled{viewOf(t, "RackedCluster"), other}, Sources: testSources(t, nil), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return a, a.byResource["rackedclusters."+profile.SampleGroup], a.byResource["rackedclusters."+otherGroup]
}

// scalingWithActivity is a Scaling at key for workload name of gvk whose
// status.lastActivity is at.
func scalingWithActivity(key types.NamespacedName, gvk schema.GroupVersionKind, name string, at time.Time) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec":   map[string]any{"targetRef": map[string]any{"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind, "name": name}},
		"status": map[string]any{"lastActivity": at.UTC().Format(metav1.RFC3339Micro)},
	}}
	u.SetGroupVersionKind(ScalingGVK)
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	return u
}

// servedScalings is an env whose cache is w and whose Scalings are served.
func servedScalings(w *world) *env {
	e := w.env()
	e.scalings = scalings.NewWriter(e.writer, ScalingWrites{}, time.Now)
	e.scalings.MarkServed()
	return e
}

// Two kinds named RackedCluster in two API groups have a Scaling each
// (name and labels), and the activity recorded in one's Scaling wakes
// that one only.
func TestScalingsOfTwoGroupsApart(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	_, ka, kb := twoGroupAutoscaler(t, now)
	nn := types.NamespacedName{Namespace: "shop", Name: "db"}
	if ka.scalingKey(nn) == kb.scalingKey(nn) {
		t.Fatalf("both kinds keep their Scaling at %s", ka.scalingKey(nn))
	}
	sa, sb := scalings.Object(withName(ka.newObject(), nn), "scaleplane-system"), scalings.Object(withName(kb.newObject(), nn), "scaleplane-system")
	if sa.GetName() == sb.GetName() || cmp.Equal(sa.GetLabels(), sb.GetLabels()) {
		t.Errorf("the two Scalings share a name or labels: %s %v and %s %v", sa.GetName(), sa.GetLabels(), sb.GetName(), sb.GetLabels())
	}
	if sa.GetName() != ka.scalingKey(nn).Name || sb.GetName() != kb.scalingKey(nn).Name {
		t.Errorf("Scalings written as %s and %s, read as %s and %s", sa.GetName(), sb.GetName(), ka.scalingKey(nn).Name, kb.scalingKey(nn).Name)
	}

	w := newWorld()
	t.Cleanup(func() { w.untouched(t) })
	w.put(scalingWithActivity(ka.scalingKey(nn), ka.view.GVK(), nn.Name, now))
	e := servedScalings(w)
	stA, stB := ka.get(nn), kb.get(nn)
	ka.syncScaling(context.Background(), e, stA)
	kb.syncScaling(context.Background(), e, stB)
	if got := stA.lastActivity(); !got.Equal(now) {
		t.Errorf("the kind whose Scaling holds the activity has %v, want %v", got, now)
	}
	if got := stB.lastActivity(); !got.IsZero() {
		t.Errorf("the other group's kind took the activity of %v", got)
	}
}

func withName(u *unstructured.Unstructured, nn types.NamespacedName) *unstructured.Unstructured {
	u.SetNamespace(nn.Namespace)
	u.SetName(nn.Name)
	u.SetUID("uid")
	return u
}

// A workload whose name has 253 characters (the most an object name
// holds) gets a Scaling whose name and labels the API server accepts, and
// two such names apart only at their end get two Scalings.
func TestScalingOfA253CharacterName(t *testing.T) {
	long := func(last string) string { return strings.Repeat("a", 120) + "." + strings.Repeat("b", 131) + last }
	var names, labels []string
	for _, last := range []string{"x", "y"} {
		u := rackedCluster("shop", long(last), 1, nil)
		u.SetUID("uid")
		if len(u.GetName()) != 253 {
			t.Fatalf("name of %d characters", len(u.GetName()))
		}
		s := scalings.Object(u, "scaleplane-system")
		if errs := validation.IsDNS1123Subdomain(s.GetName()); len(errs) > 0 {
			t.Errorf("Scaling name %q: %v", s.GetName(), errs)
		}
		for k, v := range s.GetLabels() {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				t.Errorf("label %s=%q: %v", k, v, errs)
			}
		}
		if ref, _, _ := unstructured.NestedString(s.Object, "spec", "targetRef", "name"); ref != u.GetName() {
			t.Errorf("spec.targetRef.name %q, want the full name", ref)
		}
		names = append(names, s.GetName())
		labels = append(labels, s.GetLabels()[v1alpha1.LabelWorkloadName])
	}
	if names[0] == names[1] || labels[0] == labels[1] {
		t.Errorf("two names apart at their end share a Scaling name %v or label %v", names, labels)
	}
	// A group too long for a label is cut and hashed as well.
	if v := scalings.LabelValue(strings.Repeat("g", 70) + ".example.com"); len(validation.IsValidLabelValue(v)) > 0 {
		t.Errorf("group label %q invalid", v)
	}
}

// An activity time in the future, beyond the clock-skew allowance, is
// refused wherever it comes from: a Scaling's status.lastActivity or
// History restored by a leader, and the stored time a POST /activity
// compares with (which it overwrites). Year 2250 would keep a workload
// awake for good; year 2999 overflows nanoseconds.
func TestFutureActivityRefused(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, year := range []int{2250, 2999} {
		future := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC)
		t.Run("restored/"+future.Format("2006"), func(t *testing.T) {
			a := newTestAutoscaler(t, now)
			k := a.byResource["rackedclusters"]
			nn := types.NamespacedName{Namespace: "shop", Name: "cart"}
			w := newWorld()
			t.Cleanup(func() { w.untouched(t) })
			w.put(scalingWithActivity(k.scalingKey(nn), k.view.GVK(), nn.Name, future))
			st := k.get(nn)
			k.syncScaling(context.Background(), servedScalings(w), st)
			if got := st.lastActivity(); !got.IsZero() {
				t.Errorf("restored lastActivity %v, want it refused", got)
			}
			h := status.HistoryFromStatus(&v1alpha1.ScalingHistory{LastActive: status.MicroOrNil(future)}, false, now)
			if !h.LastActive.IsZero() {
				t.Errorf("restored History.LastActive %v, want it refused", h.LastActive)
			}
			// Within the allowance, a time ahead is taken as now.
			if got, ok := scalings.ActivityTime(now.Add(MaxActivitySkew/2), now); !ok || !got.Equal(now) {
				t.Errorf("activity within the allowance: %v %v, want %v", got, ok, now)
			}
		})
		t.Run("posted/"+future.Format("2006"), func(t *testing.T) {
			a := newTestAutoscaler(t, now)
			base := serveBehindMetricsServer(t, a)
			key := types.NamespacedName{Namespace: "shop", Name: ScalingName("cart", schema.GroupKind{Group: profile.SampleGroup, Kind: "RackedCluster"})}
			c, patches := scalingStore(t, key, &future)
			aw := scalings.NewActivityWriter(c, c, "scaleplane-system")
			aw.After = func(time.Duration, func()) {}
			aw.Now = func() time.Time { return now }
			a.env.Store(&env{cache: objects{{Namespace: "shop", Name: "cart"}: true}, activity: aw, elected: make(chan struct{})})
			if got := do(t, http.MethodPost, base+"/activity/shop/rackedclusters/cart", "ok").Status; got != http.StatusAccepted {
				t.Fatalf("POST: %d, want 202", got)
			}
			if got := storedActivity(t, c, key); !got.Equal(now) || *patches != 1 {
				t.Errorf("after POST: stored %v with %d patches, want %v written", got, *patches, now)
			}
		})
	}
}

// A wake-up whose /scale write meets a conflict (the fan-out updated the
// status since the cache showed the workload, and status updates do not
// reach the loop) is decided and written again in the same reconcile,
// from the API server's copy, with the activity's own time.
func TestWakeUpSurvivesAWriteConflict(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	a := newTestAutoscaler(t, now)
	k := a.byResource["rackedclusters"]
	asleep := func(rv string) *unstructured.Unstructured {
		u := rackedCluster("shop", "fn", 0, nil)
		u.SetResourceVersion(rv)
		_ = unstructured.SetNestedField(u.Object, map[string]any{
			"minReplicas": int64(0), "maxReplicas": int64(10),
			"idle":     map[string]any{"timeoutSeconds": int64(60)},
			"triggers": []any{map[string]any{"name": "rps", "type": "AverageValue", "source": "fixed", "threshold": float64(10)}},
		}, "spec", "scaleConfig")
		return u
	}
	stale, fresh := newWorld(), newWorld()
	t.Cleanup(func() { stale.untouched(t); fresh.untouched(t) })
	stale.put(asleep("7"))
	fresh.put(asleep("8"))
	type write struct {
		Replicas        int64
		ResourceVersion string
		Err             bool
	}
	var writes []write
	writer := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		SubResourceUpdate: func(_ context.Context, _ client.Client, _ string, _ client.Object, opts ...client.SubResourceUpdateOption) error {
			o := &client.SubResourceUpdateOptions{}
			o.ApplyOptions(opts)
			body := o.SubResourceBody.(*unstructured.Unstructured)
			r, _, _ := unstructured.NestedInt64(body.Object, "spec", "replicas")
			if body.GetResourceVersion() != "8" {
				writes = append(writes, write{r, body.GetResourceVersion(), true})
				return apierrors.NewConflict(schema.GroupResource{Resource: "rackedclusters"}, "fn", errors.New("the object has been modified"))
			}
			writes = append(writes, write{r, body.GetResourceVersion(), false})
			return nil
		},
	})
	a.env.Store(&env{cache: stale, api: fresh, writer: writer})
	nn := types.NamespacedName{Namespace: "shop", Name: "fn"}
	k.get(nn).recordActivity(now.Add(-time.Second))
	if _, err := k.Reconcile(context.Background(), request("shop", "fn")); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	want := []write{{1, "7", true}, {1, "8", false}}
	if diff := cmp.Diff(want, writes); diff != "" {
		t.Errorf("/scale writes of one reconcile (-want +got):\n%s", diff)
	}
	if got := k.lookup("shop", "fn").lastActivity(); !got.Equal(now.Add(-time.Second)) {
		t.Errorf("activity %v, want the time it arrived", got)
	}
}

// The metrics and the explain view of two kinds of one name in two API
// groups are apart: each series and explanation names its group.
func TestMetricsAndExplainOfTwoGroupsApart(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	_, ka, kb := twoGroupAutoscaler(t, now)
	nn := types.NamespacedName{Namespace: "two-groups-metrics", Name: "db"}
	stA, stB := ka.get(nn), kb.get(nn)
	ka.observe(stA, scaling.Decision{Desired: 2})
	kb.observe(stB, scaling.Decision{Desired: 5})
	defer ka.deleteMetrics(stA)
	defer kb.deleteMetrics(stB)
	got := [2]float64{
		testutil.ToFloat64(desiredReplicas.WithLabelValues(profile.SampleGroup, "RackedCluster", nn.Namespace, nn.Name)),
		testutil.ToFloat64(desiredReplicas.WithLabelValues(otherGroup, "RackedCluster", nn.Namespace, nn.Name)),
	}
	if got != [2]float64{2, 5} {
		t.Errorf("scaleplane_desired_replicas of the two groups %v, want [2 5]", got)
	}
	if a, b := stA.explain(ka), stB.explain(kb); a.Group == b.Group || a.Group != profile.SampleGroup || b.Group != otherGroup {
		t.Errorf("explanations name groups %q and %q", a.Group, b.Group)
	}
}

// Until the watch shows the rename, a leader restores from the Scaling of
// the name without the group, when it targets the workload's own kind;
// one that targets the same name in another group is not taken.
func TestLegacyScalingReadUntilRenamed(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	_, ka, kb := twoGroupAutoscaler(t, now)
	nn := types.NamespacedName{Namespace: "shop", Name: "db"}
	w := newWorld()
	t.Cleanup(func() { w.untouched(t) })
	w.put(scalingWithActivity(types.NamespacedName{Namespace: "shop", Name: "db-rackedcluster"}, ka.view.GVK(), nn.Name, now))
	e := servedScalings(w)
	stA, stB := ka.get(nn), kb.get(nn)
	ka.syncScaling(context.Background(), e, stA)
	kb.syncScaling(context.Background(), e, stB)
	if got := stA.lastActivity(); !got.Equal(now) {
		t.Errorf("the kind the old Scaling targets restored %v, want %v", got, now)
	}
	if got := stB.lastActivity(); !got.IsZero() {
		t.Errorf("the other group's kind restored %v from a Scaling not its own", got)
	}
}

// A workload seen at zero since the last tick decided on it is decided on
// at once, not at the next interval: an activity that came while the
// tick that scaled it to zero ran was judged against the count before,
// and only a tick at zero wakes it.
func TestWentToZeroIsDecidedAtOnce(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	a := newTestAutoscaler(t, now)
	k := a.byResource["rackedclusters"]
	at := func(replicas int64) *unstructured.Unstructured {
		u := rackedCluster("shop", "fn", replicas, nil)
		_ = unstructured.SetNestedField(u.Object, map[string]any{
			"minReplicas": int64(0), "maxReplicas": int64(10),
			"idle":     map[string]any{"timeoutSeconds": int64(60)},
			"triggers": []any{map[string]any{"name": "rps", "type": "AverageValue", "source": "fixed", "threshold": float64(10)}},
		}, "spec", "scaleConfig")
		return u
	}
	var writes []int64
	writer := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		SubResourceUpdate: func(_ context.Context, _ client.Client, _ string, _ client.Object, opts ...client.SubResourceUpdateOption) error {
			o := &client.SubResourceUpdateOptions{}
			o.ApplyOptions(opts)
			r, _, _ := unstructured.NestedInt64(o.SubResourceBody.(*unstructured.Unstructured).Object, "spec", "replicas")
			writes = append(writes, r)
			return nil
		},
	})
	world := newWorld()
	t.Cleanup(func() { world.untouched(t) })
	world.put(at(1))
	a.env.Store(&env{cache: world, api: world, writer: writer})
	k.get(types.NamespacedName{Namespace: "shop", Name: "fn"}).recordActivity(now.Add(-time.Second))
	if _, err := k.Reconcile(context.Background(), request("shop", "fn")); err != nil {
		t.Fatalf("reconcile at 1: %v", err)
	}
	if len(writes) != 0 {
		t.Fatalf("at 1 with recent activity: writes %v, want none", writes)
	}
	// The watch shows the workload at zero before the interval is over.
	world.put(at(0))
	if _, err := k.Reconcile(context.Background(), request("shop", "fn")); err != nil {
		t.Fatalf("reconcile at 0: %v", err)
	}
	if diff := cmp.Diff([]int64{1}, writes); diff != "" {
		t.Errorf("/scale writes once seen at zero with recent activity (-want +got):\n%s", diff)
	}
}
