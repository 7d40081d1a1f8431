package webhooks

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func num(s string) json.Number { return json.Number(s) }

func TestMutate(t *testing.T) {
	views := testViews(t)
	threeRacks := func(b *objBuilder) *objBuilder { return b.groups("a", 1, "b", 2, "c", 5) }
	tests := []struct {
		name string
		kind string
		req  func() admission.Request
		// want is the patch; nil means allowed without one.
		want []jsonpatch.JsonPatchOperation
		// wantCode is the refusal code; 0 means allowed.
		wantCode int32
	}{{
		name: "M1 M5: replicas without config pins the config and fans out to every rack",
		kind: rackedCluster,
		req: func() admission.Request {
			return create(views[rackedCluster], threeRacks(makeObj(rackedCluster, "db").replicas(3)))
		},
		want: []jsonpatch.JsonPatchOperation{
			{Operation: "replace", Path: "/spec/racks/0/members", Value: num("3")},
			{Operation: "replace", Path: "/spec/racks/1/members", Value: num("3")},
			{Operation: "replace", Path: "/spec/racks/2/members", Value: num("3")},
			{Operation: "add", Path: "/spec/scaleConfig", Value: map[string]interface{}{"minReplicas": num("3"), "maxReplicas": num("3")}},
		},
	}, {
		name: "M1: Function without groups gets a pinned config",
		kind: function,
		req: func() admission.Request {
			return create(views[function], makeObj(function, "fn").replicas(2).set(".spec.runtime", "python3.12"))
		},
		want: []jsonpatch.JsonPatchOperation{
			{Operation: "add", Path: "/spec/scaleConfig", Value: map[string]interface{}{"minReplicas": num("2"), "maxReplicas": num("2")}},
		},
	}, {
		name: "M1 does not create an annotation config; M5 still fans out",
		kind: zonedDatabase,
		req: func() admission.Request {
			return create(views[zonedDatabase], makeObj(zonedDatabase, "zdb").replicas(4).groups("eu-1", 1, "eu-2", absent))
		},
		want: []jsonpatch.JsonPatchOperation{
			{Operation: "replace", Path: "/spec/topology/zones/0/size", Value: num("4")},
			{Operation: "add", Path: "/spec/topology/zones/1/size", Value: num("4")},
		},
	}, {
		name: "M2: missing minReplicas defaults to 1",
		kind: rackedCluster,
		req: func() admission.Request {
			return create(views[rackedCluster], makeObj(rackedCluster, "db").replicas(3).config(obj{"maxReplicas": 5}).groups("a", 3))
		},
		want: []jsonpatch.JsonPatchOperation{
			{Operation: "add", Path: "/spec/scaleConfig/minReplicas", Value: num("1")},
		},
	}, {
		name: "M2: missing maxReplicas defaults to max(minReplicas, replicas)",
		kind: workerGroup,
		req: func() admission.Request {
			return create(views[workerGroup], makeObj(workerGroup, "wg").replicas(4).config(obj{"minReplicas": 2}))
		},
		want: []jsonpatch.JsonPatchOperation{
			{Operation: "add", Path: "/spec/scalePolicy/maxReplicas", Value: num("4")},
		},
	}, {
		name: "M2 in an annotation: the JSON is rewritten with sorted keys, other fields kept; M4 starts replicas at minReplicas",
		kind: zonedDatabase,
		req: func() admission.Request {
			return create(views[zonedDatabase], makeObj(zonedDatabase, "zdb").
				annotate(annotationKey, `{"maxReplicas":5,"triggers":[{"name":"q","type":"AverageValue","query":"sum(rate(x[1m]))","threshold":10}]}`))
		},
		want: []jsonpatch.JsonPatchOperation{
			{Operation: "replace", Path: "/metadata/annotations/scaleplane.io~1scale-config",
				Value: `{"maxReplicas":5,"minReplicas":1,"triggers":[{"name":"q","query":"sum(rate(x[1m]))","threshold":10,"type":"AverageValue"}]}`},
			{Operation: "add", Path: "/spec", Value: map[string]interface{}{"topology": map[string]interface{}{"replicasPerZone": num("1")}}},
		},
	}, {
		name: "M3: a pinned config follows a replicas change",
		kind: rackedCluster,
		req: func() admission.Request {
			old := threeRacks(makeObj(rackedCluster, "db")).replicas(3).config(obj{"minReplicas": 3, "maxReplicas": 3}).groups("a", 3, "b", 3)
			cur := makeObj(rackedCluster, "db").replicas(5).config(obj{"minReplicas": 3, "maxReplicas": 3}).groups("a", 3, "b", 3)
			return update(views[rackedCluster], old, cur)
		},
		want: []jsonpatch.JsonPatchOperation{
			{Operation: "replace", Path: "/spec/racks/0/members", Value: num("5")},
			{Operation: "replace", Path: "/spec/racks/1/members", Value: num("5")},
			{Operation: "replace", Path: "/spec/scaleConfig/maxReplicas", Value: num("5")},
			{Operation: "replace", Path: "/spec/scaleConfig/minReplicas", Value: num("5")},
		},
	}, {
		name: "M3: a pinned annotation config follows too",
		kind: zonedDatabase,
		req: func() admission.Request {
			old := makeObj(zonedDatabase, "zdb").replicas(2).config(obj{"maxReplicas": 2, "minReplicas": 2})
			cur := makeObj(zonedDatabase, "zdb").replicas(6).config(obj{"maxReplicas": 2, "minReplicas": 2})
			return update(views[zonedDatabase], old, cur)
		},
		want: []jsonpatch.JsonPatchOperation{
			{Operation: "replace", Path: "/metadata/annotations/scaleplane.io~1scale-config", Value: `{"maxReplicas":6,"minReplicas":6}`},
		},
	}, {
		name: "M3 does not apply when the request changes the config itself",
		kind: rackedCluster,
		req: func() admission.Request {
			old := makeObj(rackedCluster, "db").replicas(3).config(obj{"minReplicas": 3, "maxReplicas": 3}).groups("a", 3)
			cur := makeObj(rackedCluster, "db").replicas(5).config(obj{"minReplicas": 3, "maxReplicas": 8}).groups("a", 3)
			return update(views[rackedCluster], old, cur)
		},
		want: []jsonpatch.JsonPatchOperation{
			{Operation: "replace", Path: "/spec/racks/0/members", Value: num("5")},
		},
	}, {
		name: "M3 does not apply to a range",
		kind: workerGroup,
		req: func() admission.Request {
			old := makeObj(workerGroup, "wg").replicas(3).config(obj{"minReplicas": 2, "maxReplicas": 6})
			cur := makeObj(workerGroup, "wg").replicas(5).config(obj{"minReplicas": 2, "maxReplicas": 6})
			return update(views[workerGroup], old, cur)
		},
	}, {
		name: "M4: a range without replicas starts at minReplicas when the HPA targets the workload",
		kind: workerGroup,
		req: func() admission.Request {
			return create(views[workerGroup], makeObj(workerGroup, "wg").set(".spec.size", 4).config(obj{"minReplicas": 2, "maxReplicas": 6}))
		},
		want: []jsonpatch.JsonPatchOperation{
			{Operation: "add", Path: "/spec/replicas", Value: num("2")},
		},
	}, {
		name: "M4 and M5 together on a racked kind",
		kind: rackedCluster,
		req: func() admission.Request {
			return create(views[rackedCluster], makeObj(rackedCluster, "db").config(obj{"minReplicas": 2, "maxReplicas": 6}).groups("a", 1, "b", absent))
		},
		want: []jsonpatch.JsonPatchOperation{
			{Operation: "replace", Path: "/spec/racks/0/members", Value: num("2")},
			{Operation: "add", Path: "/spec/racks/1/members", Value: num("2")},
			{Operation: "add", Path: "/spec/replicas", Value: num("2")},
		},
	}, {
		name: "M4 leaves replicas absent when the HPA targets a child (Kyma)",
		kind: function,
		req: func() admission.Request {
			return create(views[function], makeObj(function, "fn").config(obj{"minReplicas": 2, "maxReplicas": 6}))
		},
	}, {
		name: "without replicas every rack keeps its own members",
		kind: rackedCluster,
		req: func() admission.Request {
			return create(views[rackedCluster], threeRacks(makeObj(rackedCluster, "db")))
		},
	}, {
		name: "M6: an object already defaulted gets no patch",
		kind: rackedCluster,
		req: func() admission.Request {
			b := makeObj(rackedCluster, "db").replicas(3).config(fullConfig()).groups("a", 3, "b", 3, "c", 3)
			return update(views[rackedCluster], b, b)
		},
	}, {
		name: "M6: unknown fields are kept and only owned fields patched",
		kind: rackedCluster,
		req: func() admission.Request {
			return create(views[rackedCluster], makeObj(rackedCluster, "db").replicas(2).
				config(obj{"minReplicas": 2, "vendorExtension": obj{"a": 1.5}}).
				set(".spec.image", "scylla:6").set(".spec.unknownList", list{1, "x", nil}).groups("a", 2))
		},
		want: []jsonpatch.JsonPatchOperation{
			{Operation: "add", Path: "/spec/scaleConfig/maxReplicas", Value: num("2")},
		},
	}, {
		name: "a field error is left for validation: allowed without a patch",
		kind: rackedCluster,
		req: func() admission.Request {
			return create(views[rackedCluster], makeObj(rackedCluster, "db").set(".spec.replicas", "three").groups("a", 1))
		},
	}, {
		name: "an invalid annotation config is left for validation",
		kind: zonedDatabase,
		req: func() admission.Request {
			return create(views[zonedDatabase], makeObj(zonedDatabase, "zdb").replicas(3).annotate(annotationKey, `{"maxReplica":3}`).groups("z", 1))
		},
	}, {
		name: "DELETE is allowed untouched",
		kind: rackedCluster,
		req: func() admission.Request {
			return request(views[rackedCluster], admissionv1.Delete, "db", nil, makeObj(rackedCluster, "db").replicas(3).raw())
		},
	}, {
		name: "CONNECT is allowed untouched",
		kind: rackedCluster,
		req: func() admission.Request {
			return request(views[rackedCluster], admissionv1.Connect, "db", nil, nil)
		},
	}, {
		name: "a body that is not a JSON object is a bad request",
		kind: rackedCluster,
		req: func() admission.Request {
			return request(views[rackedCluster], admissionv1.Create, "db", []byte(`[1,2]`), nil)
		},
		wantCode: http.StatusBadRequest,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := NewMutator(views[tc.kind]).Handle(context.Background(), tc.req())
			if tc.wantCode != 0 {
				if resp.Allowed || resp.Result == nil || resp.Result.Code != tc.wantCode {
					t.Fatalf("want a refusal with code %d, got allowed=%v result=%+v", tc.wantCode, resp.Allowed, resp.Result)
				}
				return
			}
			if !resp.Allowed {
				t.Fatalf("refused: %+v", resp.Result)
			}
			// An empty patch and no patch are the same answer.
			if diff := cmp.Diff(tc.want, resp.Patches, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
			if len(tc.want) == 0 && resp.PatchType != nil {
				t.Errorf("patch type %v set on a response without a patch", *resp.PatchType)
			}
		})
	}
}

const annotationKey = "scaleplane.io/scale-config"

// TestMutateDeterministic is M6's "the same input always gives the same
// patch": jsonpatch walks maps in random order, so without sorting a patch
// touching several keys would come out in a different order each time.
func TestMutateDeterministic(t *testing.T) {
	views := testViews(t)
	req := create(views[rackedCluster], makeObj(rackedCluster, "db").replicas(3).set(".spec.zzz", 1).set(".spec.aaa", 2).
		groups("a", 1, "b", 2, "c", 5, "d", 6, "e", 7))
	h := NewMutator(views[rackedCluster])
	first := h.Handle(context.Background(), req)
	if len(first.Patches) != 6 {
		t.Fatalf("want 6 operations, got %+v", first.Patches)
	}
	for range 50 {
		if diff := cmp.Diff(first.Patches, h.Handle(context.Background(), req).Patches); diff != "" {
			t.Fatalf("the same request gave another patch (-first +again):\n%s", diff)
		}
	}
}
