package autoscaler

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
