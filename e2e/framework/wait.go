package framework

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultTimeout bounds every wait in the e2e suites; a condition that has
// not held by then is a failure, reported with the last observation.
const DefaultTimeout = 60 * time.Second

// Eventually polls cond until it reports true or the deadline passes, then
// fails the test with cond's last message. It is the only way e2e tests wait.
func Eventually(t testing.TB, timeout time.Duration, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 25*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, msg := cond(ctx)
		last = msg
		return ok, nil
	})
	if err != nil {
		t.Fatalf("condition not met within %s: %s", timeout, last)
	}
}

// EventuallyFields waits until the object c reads at key (kind gvk) shows,
// at every path of want, the value want gives, with "%d" standing for n.
// read extracts one path's value as text; what that syntax is belongs to
// the caller (kubectl's jsonpath, a dotted path).
func EventuallyFields(t testing.TB, c client.Reader, gvk schema.GroupVersionKind, key client.ObjectKey, n int, want map[string]string, read func(u *unstructured.Unstructured, path string) (string, error)) {
	t.Helper()
	Eventually(t, 0, func(ctx context.Context) (bool, string) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := c.Get(ctx, key, u); err != nil {
			return false, err.Error()
		}
		got, wantN := map[string]string{}, map[string]string{}
		for path, w := range want {
			out, err := read(u, path)
			if err != nil {
				return false, err.Error()
			}
			got[path] = out
			wantN[path] = strings.ReplaceAll(w, "%d", strconv.Itoa(n))
		}
		return cmp.Equal(wantN, got), fmt.Sprintf("at %d replicas (-want +got):\n%s", n, cmp.Diff(wantN, got))
	})
}
