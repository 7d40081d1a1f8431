package autoscaler

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/scalings"
)

// countingReader counts the cache reads the endpoint makes.
type countingReader struct {
	objects
	gets int
}

func (c *countingReader) Get(ctx context.Context, nn types.NamespacedName, obj client.Object, opts ...client.GetOption) error {
	c.gets++
	return c.objects.Get(ctx, nn, obj, opts...)
}

// TestActivityInput: the activity endpoint takes no body (a
// small one is ignored, a large one is a 413), and a namespace or name no
// object can have is a 400 before any cache read; the explain endpoint
// checks names the same way.
func TestActivityInput(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	a := newTestAutoscaler(t, now)
	base := serveBehindMetricsServer(t, a)
	cache := &countingReader{objects: objects{{Namespace: "shop", Name: "cart"}: true}}
	a.env.Store(&env{cache: cache})

	post := func(path, body string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer ok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	type result struct {
		Case       string
		Code, Gets int
	}
	var got, want []result
	check := func(name, method, path, body string, code, gets int) {
		before := cache.gets
		var status int
		if method == http.MethodGet {
			status = do(t, method, base+path, "ok").Status
		} else {
			status = post(path, body)
		}
		got = append(got, result{name, status, cache.gets - before})
		want = append(want, result{name, code, gets})
	}
	check("no body", http.MethodPost, "/activity/shop/rackedclusters/cart", "", 202, 1)
	check("small body ignored", http.MethodPost, "/activity/shop/rackedclusters/cart", "{}", 202, 1)
	check("large body", http.MethodPost, "/activity/shop/rackedclusters/cart", strings.Repeat("x", 2<<10), 413, 0)
	check("upper-case namespace", http.MethodPost, "/activity/Shop/rackedclusters/cart", "", 400, 0)
	check("name with a slash", http.MethodPost, "/activity/shop/rackedclusters/a%2Fb", "", 400, 0)
	check("dot-dot name", http.MethodPost, "/activity/shop/rackedclusters/%2E%2E", "", 400, 0)
	check("name too long", http.MethodPost, "/activity/shop/rackedclusters/"+strings.Repeat("a", 254), "", 400, 0)
	check("namespace too long", http.MethodPost, "/activity/"+strings.Repeat("a", 64)+"/rackedclusters/cart", "", 400, 0)
	check("explain, bad name", http.MethodGet, "/debug/autoscaler/shop/rackedclusters/Cart_1", "", 400, 0)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
}

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
	aw := scalings.NewActivityWriter(c, c, "scaleplane-system")
	var windows []func()
	aw.After = func(_ time.Duration, f func()) { windows = append(windows, f) }
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
	if n := aw.OpenEntries(); n != 0 {
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
	aw := scalings.NewActivityWriter(c, slow, "scaleplane-system")
	aw.After = func(time.Duration, func()) {}
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
