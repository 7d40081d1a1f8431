package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/scaleplane/scaleplane/profile"
)

// reader is a client.Reader over fixed objects, standing in for the
// manager's cache or API reader.
type reader struct {
	objs  map[string]*objBuilder // by name
	err   error
	reads int
}

func (r *reader) Get(_ context.Context, key client.ObjectKey, out client.Object, _ ...client.GetOption) error {
	r.reads++
	if r.err != nil {
		return r.err
	}
	b, ok := r.objs[key.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "test"}, key.Name)
	}
	u := out.(*unstructured.Unstructured)
	var m map[string]interface{}
	if err := json.Unmarshal(b.raw(), &m); err != nil {
		return err
	}
	u.Object = m
	return nil
}

func (r *reader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not implemented")
}

func parents(bs ...*objBuilder) *reader {
	r := &reader{objs: map[string]*objBuilder{}}
	for _, b := range bs {
		r.objs[b.o["metadata"].(obj)["name"].(string)] = b
	}
	return r
}

// scaleRequest is an UPDATE of name's /scale from oldReplicas to replicas,
// built from the parent at resourceVersion rv as the API server builds it.
func scaleRequest(view *profile.Compiled, name string, oldReplicas, replicas int32, rv string) admission.Request {
	gvr := view.GVR()
	mk := func(n int32) []byte {
		data, _ := json.Marshal(autoscalingv1.Scale{
			TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", ResourceVersion: rv},
			Spec:       autoscalingv1.ScaleSpec{Replicas: n},
		})
		return data
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:         "scale-" + "x",
		Kind:        metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"},
		Resource:    metav1.GroupVersionResource{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource},
		SubResource: "scale",
		Name:        name,
		Namespace:   "team-a",
		Operation:   admissionv1.Update,
		Object:      runtimeRaw(mk(replicas)),
		OldObject:   runtimeRaw(mk(oldReplicas)),
	}}
}

func TestScale(t *testing.T) {
	views := testViews(t)
	ranged := makeObj(rackedCluster, "db").replicas(3).config(obj{"minReplicas": 2, "maxReplicas": 6}).groups("a", 3)
	tests := []struct {
		name         string
		kind         string
		cached, live *reader
		req          admission.Request
		// wantMessage is the refusal's single cause message on
		// spec.replicas; empty means allowed.
		wantMessage string
		wantCode    int32
		wantLive    bool
	}{{
		name:   "inside the range",
		kind:   rackedCluster,
		cached: parents(ranged),
		req:    scaleRequest(views[rackedCluster], "db", 3, 6, "100"),
	}, {
		name:        "above the range: says which bound to raise",
		kind:        rackedCluster,
		cached:      parents(ranged),
		req:         scaleRequest(views[rackedCluster], "db", 3, 9, "100"),
		wantMessage: "Invalid value: 9: outside the autoscaling range [2, 6] of spec.scaleConfig; raise spec.scaleConfig.maxReplicas to 9 or more, or pin the config (minReplicas = maxReplicas) to scale by hand",
	}, {
		name:        "below the range: says which bound to lower",
		kind:        rackedCluster,
		cached:      parents(ranged),
		req:         scaleRequest(views[rackedCluster], "db", 3, 1, "100"),
		wantMessage: "Invalid value: 1: outside the autoscaling range [2, 6] of spec.scaleConfig; lower spec.scaleConfig.minReplicas to 1 or less, or pin the config (minReplicas = maxReplicas) to scale by hand",
	}, {
		name:        "the WorkerGroup's config path is named",
		kind:        workerGroup,
		cached:      parents(makeObj(workerGroup, "wg").replicas(2).config(obj{"minReplicas": 2, "maxReplicas": 4})),
		req:         scaleRequest(views[workerGroup], "wg", 2, 5, "100"),
		wantMessage: "Invalid value: 5: outside the autoscaling range [2, 4] of spec.scalePolicy; raise spec.scalePolicy.maxReplicas to 5 or more, or pin the config (minReplicas = maxReplicas) to scale by hand",
	}, {
		name:        "an annotation config is named by its key; a missing minReplicas counts as 1 (M2)",
		kind:        zonedDatabase,
		cached:      parents(makeObj(zonedDatabase, "zdb").replicas(2).config(obj{"maxReplicas": 4})),
		req:         scaleRequest(views[zonedDatabase], "zdb", 2, 7, "100"),
		wantMessage: "Invalid value: 7: outside the autoscaling range [1, 4] of the annotation scaleplane.io/scale-config; raise maxReplicas in the annotation scaleplane.io/scale-config to 7 or more, or pin the config (minReplicas = maxReplicas) to scale by hand",
	}, {
		name:        "negative replicas",
		kind:        rackedCluster,
		cached:      parents(ranged),
		req:         scaleRequest(views[rackedCluster], "db", 3, -1, "100"),
		wantMessage: "Invalid value: -1: must be greater than or equal to 0",
	}, {
		name:        "above the profile's bound, even without a config",
		kind:        zonedDatabase,
		cached:      parents(makeObj(zonedDatabase, "zdb").replicas(2)),
		req:         scaleRequest(views[zonedDatabase], "zdb", 2, 51, "100"),
		wantMessage: "Invalid value: 51: must be less than or equal to 50, the upper bound this kind's profile allows; scale to 50 or less, or raise the profile's maxReplicas",
	}, {
		name:   "a pinned config follows any count (the controller re-pins it)",
		kind:   rackedCluster,
		cached: parents(makeObj(rackedCluster, "db").replicas(3).config(obj{"minReplicas": 3, "maxReplicas": 3})),
		req:    scaleRequest(views[rackedCluster], "db", 3, 10, "100"),
	}, {
		name:   "a child-target kind: a /scale write selects external scaling, where the range does not apply (W2)",
		kind:   function,
		cached: parents(makeObj(function, "fn").config(obj{"minReplicas": 1, "maxReplicas": 3})),
		req:    scaleRequest(views[function], "fn", 0, 7, "100"),
	}, {
		name:   "no config: anything from 0 up",
		kind:   function,
		cached: parents(makeObj(function, "fn").replicas(1)),
		req:    scaleRequest(views[function], "fn", 1, 0, "100"),
	}, {
		name:   "an unchanged count is not judged",
		kind:   rackedCluster,
		cached: parents(ranged),
		req:    scaleRequest(views[rackedCluster], "db", 9, 9, "100"),
	}, {
		name:   "a parent that is gone is the API server's to report",
		kind:   rackedCluster,
		cached: parents(),
		live:   parents(),
		req:    scaleRequest(views[rackedCluster], "db", 3, 9, "100"),
	}, {
		name:     "a stale cache is bypassed: the range was just widened",
		kind:     rackedCluster,
		cached:   parents(ranged),
		live:     parents(makeObj(rackedCluster, "db").replicas(3).config(obj{"minReplicas": 2, "maxReplicas": 12}).set(".metadata.resourceVersion", "101")),
		req:      scaleRequest(views[rackedCluster], "db", 3, 9, "101"),
		wantLive: true,
	}, {
		name:     "the parent cannot be read: refused with the reason, so it can be retried",
		kind:     rackedCluster,
		cached:   &reader{err: errors.New("connection refused")},
		live:     &reader{err: errors.New("connection refused")},
		req:      scaleRequest(views[rackedCluster], "db", 3, 9, "100"),
		wantCode: http.StatusInternalServerError,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var live client.Reader
			if tc.live != nil {
				live = tc.live
			}
			resp := NewScaleValidator(views[tc.kind], tc.cached, live).Handle(context.Background(), tc.req)
			switch {
			case tc.wantCode != 0:
				if resp.Allowed || resp.Result.Code != tc.wantCode {
					t.Fatalf("want a refusal with code %d, got allowed=%v %+v", tc.wantCode, resp.Allowed, resp.Result)
				}
			case tc.wantMessage == "":
				if !resp.Allowed {
					t.Fatalf("refused: %s", resp.Result.Message)
				}
			default:
				if resp.Allowed {
					t.Fatalf("allowed, want %q", tc.wantMessage)
				}
				st := resp.Result
				if st.Code != http.StatusUnprocessableEntity || st.Details == nil || st.Details.Kind != views[tc.kind].GVK().Kind {
					t.Fatalf("want a 422 naming the %s, got %+v", views[tc.kind].GVK().Kind, st)
				}
				// The count lands in the kind's own replicas field, which
				// the refusal names, as the API server's own would.
				field := "spec.replicas"
				if tc.kind == zonedDatabase {
					field = "spec.topology.replicasPerZone"
				}
				want := []metav1.StatusCause{{Type: invalidValue, Field: field, Message: tc.wantMessage}}
				if diff := cmp.Diff(want, st.Details.Causes); diff != "" {
					t.Errorf("causes (-want +got):\n%s", diff)
				}
			}
			if tc.live != nil && (tc.live.reads > 0) != tc.wantLive && tc.wantCode == 0 && len(tc.live.objs) > 0 {
				t.Errorf("live reads %d, want live read %v", tc.live.reads, tc.wantLive)
			}
		})
	}
}

func TestScaleIgnoresOtherOperations(t *testing.T) {
	views := testViews(t)
	req := scaleRequest(views[rackedCluster], "db", 3, -5, "1")
	req.Operation = admissionv1.Create
	if resp := NewScaleValidator(views[rackedCluster], parents(), nil).Handle(context.Background(), req); !resp.Allowed {
		t.Errorf("CREATE of a Scale refused: %+v", resp.Result)
	}
}
