package endpoints

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// fakeLoop answers as its fields say and counts what it was asked.
type fakeLoop struct {
	asked []string
	err   error
}

func (f *fakeLoop) Explain(resource string, nn types.NamespacedName) (Explanation, error) {
	f.asked = append(f.asked, "explain "+resource+" "+nn.String())
	return Explanation{Resource: resource, Namespace: nn.Namespace, Name: nn.Name}, f.err
}

func (f *fakeLoop) RecordActivity(_ context.Context, resource string, nn types.NamespacedName) (ActivityResponse, error) {
	f.asked = append(f.asked, "activity "+resource+" "+nn.String())
	return ActivityResponse{Namespace: nn.Namespace, Name: nn.Name}, f.err
}

// A request no object can match (a body on the activity signal, a name
// that is no object name) is answered before the loop is asked; one the
// loop refuses is answered with the loop's status; the rest reach it.
func TestRequestsCheckedBeforeTheLoopIsAsked(t *testing.T) {
	type answer struct {
		Status int
		Asked  []string
	}
	cases := []struct {
		name, method, path, body string
		err                      error
		want                     answer
	}{
		{"activity", http.MethodPost, "/activity/shop/rackedclusters/cart", "", nil,
			answer{http.StatusAccepted, []string{"activity rackedclusters shop/cart"}}},
		{"activity with a body over the limit", http.MethodPost, "/activity/shop/rackedclusters/cart", strings.Repeat("x", maxActivityBody+1), nil,
			answer{http.StatusRequestEntityTooLarge, nil}},
		{"activity for a name no object has", http.MethodPost, "/activity/shop/rackedclusters/Cart_1", "", nil,
			answer{http.StatusBadRequest, nil}},
		{"explain", http.MethodGet, "/debug/autoscaler/shop/rackedclusters/cart", "", nil,
			answer{http.StatusOK, []string{"explain rackedclusters shop/cart"}}},
		{"explain in a namespace no namespace has", http.MethodGet, "/debug/autoscaler/Shop.x/rackedclusters/cart", "", nil,
			answer{http.StatusBadRequest, nil}},
		{"explain refused by the loop", http.MethodGet, "/debug/autoscaler/shop/widgets/cart", "", &Problem{Status: http.StatusNotFound, Message: "not profiled"},
			answer{http.StatusNotFound, []string{"explain widgets shop/cart"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			loop := &fakeLoop{err: tc.err}
			rec := httptest.NewRecorder()
			Handler(loop).ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
			if diff := cmp.Diff(tc.want, answer{rec.Code, loop.asked}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
