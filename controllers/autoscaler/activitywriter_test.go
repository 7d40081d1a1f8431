package autoscaler

import (
	"context"
	"net/http"
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

// Activity posted to a replica that is not the leader is
// recorded in the workload's Scaling (where the leader's watch sees it),
// and leaves no memory on that replica.
func TestActivityOnANonLeader(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	a := newTestAutoscaler(t, now)
	base := serveBehindMetricsServer(t, a)
	key := types.NamespacedName{Namespace: "shop", Name: "cart-rackedcluster.samples.scaleplane.io"}
	c, _ := scalingStore(t, key, nil)
	aw := newActivityWriter(c, c, "scaleplane-system")
	var windows []func()
	aw.after = func(_ time.Duration, f func()) { windows = append(windows, f) }
	a.env.Store(&env{cache: objects{{Namespace: "shop", Name: "cart"}: true}, activity: aw, elected: make(chan struct{})})

	if got := do(t, http.MethodPost, base+"/activity/shop/rackedclusters/cart", "ok").Status; got != http.StatusAccepted {
		t.Fatalf("POST: %d, want 202", got)
	}
	if got := storedActivity(t, c, key); !got.Equal(now) {
		t.Errorf("Scaling lastActivity %v, want %v", got, now)
	}
	k := a.byResource["rackedclusters"]
	if n := k.remembered(); n != 0 {
		t.Errorf("a replica that is not the leader remembers %d workloads, want 0", n)
	}
	for len(windows) > 0 {
		f := windows[0]
		windows = windows[1:]
		f()
	}
	if n := aw.openEntries(); n != 0 {
		t.Errorf("%d activity windows left open, want 0", n)
	}
}

// On the leader, activity queues the workload's tick before the durable
// write to its Scaling, which the API server may be slow to take (every
// namespace's writes share it): a wake-up waits for no API round trip.
// The answer still waits for the write.
func TestActivityTicksBeforeItsDurableWrite(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	a := newTestAutoscaler(t, now)
	base := serveBehindMetricsServer(t, a)
	key := types.NamespacedName{Namespace: "shop", Name: "cart-rackedcluster.samples.scaleplane.io"}
	c, _ := scalingStore(t, key, nil)
	release := make(chan struct{})
	slow := interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			<-release
			return c.Get(ctx, key, obj, opts...)
		},
	})
	aw := newActivityWriter(c, slow, "scaleplane-system")
	aw.after = func(time.Duration, func()) {}
	elected := make(chan struct{})
	close(elected)
	a.env.Store(&env{cache: objects{{Namespace: "shop", Name: "cart"}: true}, activity: aw, elected: elected})
	k := a.byResource["rackedclusters"]

	answered := make(chan int, 1)
	go func() { answered <- do(t, http.MethodPost, base+"/activity/shop/rackedclusters/cart", "ok").Status }()
	select {
	case ev := <-k.wake:
		if got := ev.Object.GetNamespace() + "/" + ev.Object.GetName(); got != "shop/cart" {
			t.Errorf("tick queued for %s, want shop/cart", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no tick queued while the durable write waits for the API server")
	}
	select {
	case got := <-answered:
		t.Fatalf("answered %d before the durable write", got)
	default:
	}
	close(release)
	if got := <-answered; got != http.StatusAccepted {
		t.Errorf("POST: %d, want 202", got)
	}
	if got := storedActivity(t, c, key); !got.Equal(now) {
		t.Errorf("Scaling lastActivity %v, want %v", got, now)
	}
}

// Activity is coalesced to one write per workload per window, the newest
// time written when the window ends, and never moves back.
func TestActivityCoalescedNeverBack(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	key := types.NamespacedName{Namespace: "shop", Name: "cart-rackedcluster.samples.scaleplane.io"}
	a := newTestAutoscaler(t, t0)
	k := a.byResource["rackedclusters"]
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k.view.GVK())
	u.SetNamespace("shop")
	u.SetName("cart")
	ctx := context.Background()

	t.Run("coalesced", func(t *testing.T) {
		c, patches := scalingStore(t, key, nil)
		aw := newActivityWriter(c, c, "scaleplane-system")
		var windows []func()
		aw.after = func(_ time.Duration, f func()) { windows = append(windows, f) }
		for i := 0; i < 5; i++ {
			if err := aw.record(ctx, k, u, t0.Add(time.Duration(i)*100*time.Millisecond)); err != nil {
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
		if n := aw.openEntries(); n != 0 || len(windows) != 2 {
			t.Errorf("open entries %d, windows %d; want 0 and 2", n, len(windows))
		}
	})
	t.Run("never back", func(t *testing.T) {
		later := t0.Add(time.Minute)
		c, patches := scalingStore(t, key, &later)
		aw := newActivityWriter(c, c, "scaleplane-system")
		aw.after = func(time.Duration, func()) {}
		if err := aw.record(ctx, k, u, t0); err != nil {
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
	a := newTestAutoscaler(t, t0)
	k := a.byResource["rackedclusters"]
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k.view.GVK())
	u.SetNamespace("shop")
	u.SetName("cart")
	c, patches := scalingStore(t, key, nil)
	aw := newActivityWriter(c, c, "scaleplane-system")
	aw.limiter = rate.NewLimiter(0, 0) // no budget
	var windows []func()
	aw.after = func(_ time.Duration, f func()) { windows = append(windows, f) }
	if err := aw.record(context.Background(), k, u, t0); err != nil {
		t.Fatal(err)
	}
	windows[0]()
	if *patches != 0 || len(windows) != 2 {
		t.Fatalf("without budget: %d patches, %d windows; want 0 and the window open again", *patches, len(windows))
	}
	aw.limiter = rate.NewLimiter(rate.Inf, 1)
	windows[1]()
	if got := storedActivity(t, c, key); *patches != 1 || !got.Equal(t0) {
		t.Errorf("once a token frees: %d patches, stored %v; want 1 and %v", *patches, got, t0)
	}
}
