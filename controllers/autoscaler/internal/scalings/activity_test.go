package scalings

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/time/rate"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
)

// scalingStore is a fake API server holding Scalings (status subresource
// included), counting status patches; created, when not nil, is the
// Scaling's lastActivity at the start.
func scalingStore(t *testing.T, key types.NamespacedName, activity *time.Time) (client.Client, *int) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	s := &v1alpha1.Scaling{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if activity != nil {
		m := metav1.NewMicroTime(*activity)
		s.Status.LastActivity = &m
	}
	patches := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(s).WithStatusSubresource(&v1alpha1.Scaling{}).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				patches++
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	return c, &patches
}

func storedActivity(t *testing.T, c client.Client, key types.NamespacedName) time.Time {
	t.Helper()
	s := &v1alpha1.Scaling{}
	if err := c.Get(context.Background(), key, s); err != nil {
		t.Fatal(err)
	}
	if s.Status.LastActivity == nil {
		return time.Time{}
	}
	return s.Status.LastActivity.Time
}

// Activity is coalesced to one write per workload per window, the newest
// time written when the window ends, and never moves back.
func TestActivityCoalescedNeverBack(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	key := types.NamespacedName{Namespace: "shop", Name: "cart-rackedcluster.samples.scaleplane.io"}
	u := rackedCluster("shop", "cart")
	ctx := context.Background()

	t.Run("coalesced", func(t *testing.T) {
		c, patches := scalingStore(t, key, nil)
		aw := NewActivityWriter(c, c, "scaleplane-system")
		var windows []func()
		aw.After = func(_ time.Duration, f func()) { windows = append(windows, f) }
		for i := 0; i < 5; i++ {
			if err := aw.Record(ctx, key, u, t0.Add(time.Duration(i)*100*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
		}
		type state struct {
			Patches  int
			Activity time.Time
		}
		if diff := cmp.Diff(state{1, t0}, state{*patches, storedActivity(t, c, key)}); diff != "" {
			t.Errorf("within the window (-want +got):\n%s", diff)
		}
		windows[0]()
		if diff := cmp.Diff(state{2, t0.Add(400 * time.Millisecond)}, state{*patches, storedActivity(t, c, key)}); diff != "" {
			t.Errorf("at the window's end (-want +got):\n%s", diff)
		}
		windows[1]()
		// No window opens again; the one more timer drops the
		// namespace's bucket once it has refilled.
		if n := aw.OpenEntries(); n != 0 || len(windows) != 3 {
			t.Errorf("open entries %d, timers %d; want 0 and 3", n, len(windows))
		}
	})
	t.Run("never back", func(t *testing.T) {
		later := t0.Add(time.Minute)
		c, patches := scalingStore(t, key, &later)
		aw := NewActivityWriter(c, c, "scaleplane-system")
		aw.After = func(time.Duration, func()) {}
		if err := aw.Record(ctx, key, u, t0); err != nil {
			t.Fatal(err)
		}
		if got := storedActivity(t, c, key); *patches != 0 || !got.Equal(later) {
			t.Errorf("an older activity: %d patches, stored %v; want 0 and %v", *patches, got, later)
		}
	})
}

// Over the replica's write budget a signal waits in its window, and is
// written once a token frees: never dropped, never a burst of writes.
func TestActivityWithinTheReplicasBudget(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	key := types.NamespacedName{Namespace: "shop", Name: "cart-rackedcluster.samples.scaleplane.io"}
	u := rackedCluster("shop", "cart")
	c, patches := scalingStore(t, key, nil)
	aw := NewActivityWriter(c, c, "scaleplane-system")
	aw.Limiter = rate.NewLimiter(0, 0) // no budget
	var windows []func()
	aw.After = func(_ time.Duration, f func()) { windows = append(windows, f) }
	if err := aw.Record(context.Background(), key, u, t0); err != nil {
		t.Fatal(err)
	}
	windows[0]()
	if *patches != 0 || len(windows) != 2 {
		t.Fatalf("without budget: %d patches, %d windows; want 0 and the window open again", *patches, len(windows))
	}
	aw.Limiter = rate.NewLimiter(rate.Inf, 1)
	windows[1]()
	if got := storedActivity(t, c, key); *patches != 1 || !got.Equal(t0) {
		t.Errorf("once a token frees: %d patches, stored %v; want 1 and %v", *patches, got, t0)
	}
}

// activityCluster is a fake API server holding a Scaling for each of
// count workloads of each namespace, counting status patches by
// namespace; the signals are one per workload, the namespaces taking
// turns.
func activityCluster(t *testing.T, count int, namespaces ...string) (client.Client, map[string]int, []activitySignal) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	var signals []activitySignal
	for i := range count {
		for _, ns := range namespaces {
			name := fmt.Sprintf("w-%d", i)
			key := types.NamespacedName{Namespace: ns, Name: name + "-rackedcluster.samples.scaleplane.io"}
			objs = append(objs, &v1alpha1.Scaling{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
			signals = append(signals, activitySignal{key, rackedCluster(ns, name)})
		}
	}
	patches := map[string]int{}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&v1alpha1.Scaling{}).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				patches[obj.GetNamespace()]++
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	return c, patches, signals
}

type activitySignal struct {
	key types.NamespacedName
	u   *unstructured.Unstructured
}

// Activity for twenty workloads of one namespace borrows past that
// namespace's share what no other namespace uses, but always leaves a
// write: a workload of another namespace posting then is written at
// once, while the flood's other signals wait in their windows. The
// buckets do not refill (rate 0), so what each allows is counted, not
// timed. Once every window has closed, the replica keeps no bucket.
func TestActivityOfOneNamespaceLeavesANewcomerAWrite(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	c, patches, flood := activityCluster(t, 20, "flood")
	_, _, quiet := activityCluster(t, 1, "quiet")
	if err := c.Create(context.Background(), &v1alpha1.Scaling{ObjectMeta: metav1.ObjectMeta{Namespace: quiet[0].key.Namespace, Name: quiet[0].key.Name}}); err != nil {
		t.Fatal(err)
	}
	aw := NewActivityWriter(c, c, "scaleplane-system")
	aw.Limiter = rate.NewLimiter(0, 10)
	aw.NamespaceLimiter = func() *rate.Limiter { return rate.NewLimiter(0, 5) }
	var windows []func()
	aw.After = func(_ time.Duration, f func()) { windows = append(windows, f) }
	ctx := context.Background()
	for _, s := range append(flood, quiet...) {
		if err := aw.Record(ctx, s.key, s.u, t0); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(map[string]int{"flood": 9, "quiet": 1}, patches); diff != "" {
		t.Errorf("writes per namespace (-want +got):\n%s", diff)
	}
	// The written windows close; the flood's others keep waiting.
	aw.mu.Lock()
	aw.Limiter = rate.NewLimiter(rate.Inf, 1)
	for _, b := range aw.shares.buckets {
		b.limiter = rate.NewLimiter(rate.Inf, 1)
	}
	aw.mu.Unlock()
	for ran := 0; len(windows) > 0; ran++ {
		if ran > 1000 {
			t.Fatal("windows keep reopening")
		}
		f := windows[0]
		windows = windows[1:]
		f()
	}
	if got := patches["flood"]; got != 20 {
		t.Errorf("the flood's signals written in all: %d, want 20", got)
	}
	aw.mu.Lock()
	left := len(aw.shares.buckets)
	aw.mu.Unlock()
	if n := aw.OpenEntries(); n != 0 || left != 0 {
		t.Errorf("%d windows and %d namespace buckets left, want none", n, left)
	}
}

// A namespace alone takes the replica's whole budget (but the write
// kept for a newcomer), not only its share; two namespaces posting in
// turns each take their share, half. The buckets do not refill (rate 0),
// so what each allows is counted, not timed.
func TestActivityNamespaceAloneBorrowsTwoNamespacesGetTheirHalf(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		namespaces []string
		want       map[string]int
	}{
		{"alone", []string{"a"}, map[string]int{"a": 19}},
		{"two", []string{"a", "b"}, map[string]int{"a": 10, "b": 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, patches, signals := activityCluster(t, 30, tc.namespaces...)
			aw := NewActivityWriter(c, c, "scaleplane-system")
			aw.Limiter = rate.NewLimiter(0, 20)
			aw.NamespaceLimiter = func() *rate.Limiter { return rate.NewLimiter(0, 10) }
			aw.After = func(time.Duration, func()) {}
			for _, s := range signals {
				if err := aw.Record(context.Background(), s.key, s.u, t0); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tc.want, patches); diff != "" {
				t.Errorf("writes per namespace (-want +got):\n%s", diff)
			}
		})
	}
}

// A namespace whose windows have all closed keeps its bucket until it has
// refilled: letting every window close and posting again does not give
// the namespace a fresh burst past its share, while another namespace
// has its own share left.
func TestActivityNamespaceGetsNoFreshBurstByLettingItsWindowsClose(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	var keys []types.NamespacedName
	for i := range 10 {
		key := types.NamespacedName{Namespace: "flood", Name: fmt.Sprintf("fn-%d-rackedcluster.samples.scaleplane.io", i)}
		objs = append(objs, &v1alpha1.Scaling{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
		keys = append(keys, key)
	}
	quiet := types.NamespacedName{Namespace: "quiet", Name: "cart-rackedcluster.samples.scaleplane.io"}
	objs = append(objs, &v1alpha1.Scaling{ObjectMeta: metav1.ObjectMeta{Namespace: quiet.Namespace, Name: quiet.Name}})
	patches := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&v1alpha1.Scaling{}).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				if obj.GetNamespace() == "flood" {
					patches++
				}
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	aw := NewActivityWriter(c, c, "scaleplane-system")
	// Room for both shares: past its own, the flood borrows nothing
	// while the other namespace has its share left.
	aw.Limiter = rate.NewLimiter(0, 10)
	aw.NamespaceLimiter = func() *rate.Limiter { return rate.NewLimiter(0, 5) }
	var windows []func()
	aw.After = func(_ time.Duration, f func()) { windows = append(windows, f) }
	ctx := context.Background()
	for i, key := range keys {
		if i == 5 {
			// Every written window closes with nothing pending.
			for len(windows) > 0 {
				f := windows[0]
				windows = windows[1:]
				f()
			}
			if aw.OpenEntries() != 0 {
				t.Fatalf("%d windows open, want none", aw.OpenEntries())
			}
			if err := aw.Record(ctx, quiet, rackedCluster("quiet", "cart"), t0); err != nil {
				t.Fatal(err)
			}
		}
		if err := aw.Record(ctx, key, rackedCluster("flood", fmt.Sprintf("fn-%d", i)), t0); err != nil {
			t.Fatal(err)
		}
	}
	if patches != 5 {
		t.Errorf("%d writes of one namespace with a bucket of 5 that does not refill, want 5", patches)
	}
}

// Two namespaces that keep their activity flowing past their shares (half
// of the replica's budget each) do not starve a third: a signal of a
// workload in another namespace that waits for its window's end is
// written within a few windows, not when the flood happens to leave a
// token free at that moment. The clock is the test's; windows end in the
// order they are due.
func TestActivityOfTwoNamespacesAtTheirSharesLeavesAThirdItsWrites(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	c, patches, flood := activityCluster(t, 1000, "a", "b")
	_, _, quiet := activityCluster(t, 1, "c")
	if err := c.Create(context.Background(), &v1alpha1.Scaling{ObjectMeta: metav1.ObjectMeta{Namespace: quiet[0].key.Namespace, Name: quiet[0].key.Name}}); err != nil {
		t.Fatal(err)
	}
	now := t0
	aw := NewActivityWriter(c, c, "scaleplane-system")
	aw.Now = func() time.Time { return now }
	type timer struct {
		at time.Time
		f  func()
	}
	var timers []timer
	aw.After = func(d time.Duration, f func()) { timers = append(timers, timer{now.Add(d), f}) }
	ctx := context.Background()
	const step = 10 * time.Millisecond
	var posted time.Time
	for i := range 3000 {
		now = t0.Add(time.Duration(i) * step)
		// The flood posts without pause, its workloads in turns.
		for j := range 20 {
			s := flood[(20*i+j)%len(flood)]
			if err := aw.Record(ctx, s.key, s.u, now); err != nil {
				t.Fatal(err)
			}
		}
		for len(timers) > 0 {
			next := 0
			for k := range timers {
				if timers[k].at.Before(timers[next].at) {
					next = k
				}
			}
			if timers[next].at.After(now) {
				break
			}
			f := timers[next].f
			timers = append(timers[:next], timers[next+1:]...)
			f()
		}
		// The third namespace posts, and again half a second later.
		if i == 500 || i == 550 {
			if err := aw.Record(ctx, quiet[0].key, quiet[0].u, now); err != nil {
				t.Fatal(err)
			}
			posted = now
		}
		if i >= 550 && !storedActivity(t, c, quiet[0].key).Before(posted) {
			if late := now.Sub(posted); late > 3*time.Second {
				t.Errorf("the third namespace's signal was written %s after it was posted, want within 3 windows", late)
			}
			return
		}
	}
	t.Errorf("the third namespace's signal was not written within %s of its post beside two namespaces at their shares (a %d, b %d writes)", now.Sub(posted), patches["a"], patches["b"])
}
