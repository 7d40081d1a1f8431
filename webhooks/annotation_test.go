package webhooks

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/profile/profiletest"
)

// unreadableAnnotations are scale-config annotations that cannot be read:
// V9 refuses each on CREATE.
var unreadableAnnotations = map[string]string{
	"a misspelt field":     `{"minReplica":1,"maxReplicas":5}`,
	"text that is no JSON": `min 1 max 5`,
	"a count as a string":  `{"minReplicas":"1","maxReplicas":5}`,
	"a threshold that is no quantity": `{"minReplicas":1,"maxReplicas":5,"triggers":[{"name":"rps","type":"AverageValue",` +
		`"query":"sum(rate(http_requests_total[2m]))","threshold":"10s"}]}`,
}

// TestAnnotationConfigThatCannotBeReadIsRefusedOnUpdate: the ratchet keeps
// only what was stored. An annotation that appears on an object that had no
// config (kubectl annotate), or that changes, is refused as on CREATE; the
// same unreadable annotation kept by an update (a finalizer removed) is
// allowed with its problems as warnings.
func TestAnnotationConfigThatCannotBeReadIsRefusedOnUpdate(t *testing.T) {
	v := testViews(t)[zonedDatabase]
	h := NewValidator(v, testSources())
	base := func() *objBuilder { return makeObj(zonedDatabase, "zdb").replicas(2).groups("z", 2) }
	for name, text := range unreadableAnnotations {
		t.Run(name, func(t *testing.T) {
			cur := base().annotate(annotationKey, text)
			for _, tc := range []struct {
				name string
				req  admission.Request
			}{
				{"create", create(v, cur)},
				{"annotated on update", update(v, base(), cur)},
				{"changed on update", update(v, base().annotate(annotationKey, text+" "), base().annotate(annotationKey, text+"  x"))},
				{"replacing a valid config", update(v, base().annotate(annotationKey, `{"minReplicas":2,"maxReplicas":2}`), cur)},
			} {
				resp := h.Handle(context.Background(), tc.req)
				if resp.Allowed {
					t.Errorf("%s: allowed with warnings %q, want a refusal", tc.name, resp.Warnings)
					continue
				}
				for _, c := range causes(resp.Result) {
					if !strings.HasPrefix(c.Field, annotationCfg) {
						t.Errorf("%s: cause at %s, want one under %s", tc.name, c.Field, annotationCfg)
					}
				}
			}
			kept := base().annotate(annotationKey, text)
			kept.o["metadata"].(obj)["finalizers"] = list{}
			resp := h.Handle(context.Background(), update(v, base().annotate(annotationKey, text), kept))
			if !resp.Allowed {
				t.Fatalf("kept unchanged: refused: %s", resp.Result.Message)
			}
			if len(resp.Warnings) == 0 || !strings.HasPrefix(resp.Warnings[0], "kept unchanged although invalid: "+annotationCfg) {
				t.Errorf("kept unchanged: warnings %q", resp.Warnings)
			}
		})
	}
}

// TestAnnotationConfigReencodedCountsAsUnchanged: the ratchet compares an
// annotation's JSON by value, so a stored config re-encoded with other
// spacing and key order is still the stored one.
func TestAnnotationConfigReencodedCountsAsUnchanged(t *testing.T) {
	v := testViews(t)[zonedDatabase]
	old := makeObj(zonedDatabase, "zdb").replicas(2).annotate(annotationKey, `{"maxReplicas":5,"minReplica":1}`)
	cur := makeObj(zonedDatabase, "zdb").replicas(2).annotate(annotationKey, `{ "minReplica": 1, "maxReplicas": 5 }`)
	if resp := NewValidator(v, testSources()).Handle(context.Background(), update(v, old, cur)); !resp.Allowed {
		t.Errorf("refused: %s", resp.Result.Message)
	}
}

// TestAnnotationConfigReportsEveryProblemAtOnce: a field that cannot be
// decoded does not hide the problems of the others (V9 with V1–V11), in an
// annotation as at a spec path.
func TestAnnotationConfigReportsEveryProblemAtOnce(t *testing.T) {
	views := testViews(t)
	trigger := obj{"name": "rps", "type": "AverageValue", "query": "sum(rate(http_requests_total[2m]))", "threshold": "10s"}
	tests := []struct {
		name string
		kind string
		cfg  obj
		want []cause
	}{{
		name: "annotation: a bound above the profile's and a threshold that is no quantity",
		kind: zonedDatabase,
		cfg:  obj{"minReplicas": 1, "maxReplicas": 2000, "triggers": list{trigger}},
		want: []cause{{invalidValue, annotationCfg + ".triggers[0].threshold"}, {invalidValue, annotationCfg + ".maxReplicas"}},
	}, {
		name: "spec path: the same",
		kind: rackedCluster,
		cfg:  obj{"minReplicas": 1, "maxReplicas": 2000, "triggers": list{trigger}},
		want: []cause{{invalidValue, scaleConfig + ".triggers[0].threshold"}, {invalidValue, scaleConfig + ".maxReplicas"}},
	}, {
		name: "annotation: an unknown field, a count as a string and an empty range",
		kind: zonedDatabase,
		cfg:  obj{"minReplicas": 4, "maxReplicas": 2, "pollingIntervalSeconds": "10", "minReplica": 1},
		want: []cause{
			{invalidValue, annotationCfg + ".pollingIntervalSeconds"},
			{invalidValue, annotationCfg + ".minReplica"},
			{invalidValue, annotationCfg + ".minReplicas"},
		},
	}, {
		name: "an unreadable bound is reported once, not judged as its default",
		kind: zonedDatabase,
		cfg:  obj{"minReplicas": "3", "maxReplicas": 2, "idle": obj{"replicasAtStart": 2, "timeoutSeconds": 60}},
		want: []cause{{invalidValue, annotationCfg + ".minReplicas"}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := views[tc.kind]
			b := makeObj(tc.kind, "w").replicas(2).config(tc.cfg)
			resp := NewValidator(v, testSources()).Handle(context.Background(), create(v, b))
			if resp.Allowed {
				t.Fatalf("allowed, want %v", tc.want)
			}
			if diff := cmp.Diff(tc.want, causes(resp.Result)); diff != "" {
				t.Errorf("causes (-want +got):\n%s\nmessage: %s", diff, resp.Result.Message)
			}
		})
	}
}

// instanceSetView is profiletest.InstanceSet against its CRD:
// .spec.instances with minimum 1 and maximum 10, the config in an
// annotation.
func instanceSetView(t *testing.T) *profile.Compiled {
	t.Helper()
	v, err := profile.Compile(profiletest.InstanceSet())
	if err != nil {
		t.Fatal(err)
	}
	if v, err = v.WithCRD(profiletest.InstanceSetCRD()); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestAnnotationRangeHeldToTheReplicasSchema: an annotation config is held
// to the schema of the field its counts are written to, as a spec config
// is (M7). A range from zero with an idle timeout on a kind whose
// .spec.instances has minimum 1 would have the autoscaler write 0 on every
// poll, each write refused by the API server.
func TestAnnotationRangeHeldToTheReplicasSchema(t *testing.T) {
	v := instanceSetView(t)
	h := NewValidator(v, testSources())
	set := func(ann string) *objBuilder {
		b := makeObj("InstanceSet", "pg").set(".spec.instances", 2)
		if ann != "" {
			b.annotate(annotationKey, ann)
		}
		return b
	}
	toZero := set(`{"minReplicas":0,"maxReplicas":5,"idle":{"timeoutSeconds":300}}`)
	for _, req := range []admission.Request{create(v, toZero), update(v, set(""), toZero)} {
		resp := h.Handle(context.Background(), req)
		if resp.Allowed {
			t.Fatalf("%s: allowed, want a refusal at minReplicas", req.Operation)
		}
		want := []metav1.StatusCause{{Type: invalidValue, Field: annotationCfg + ".minReplicas",
			Message: "Invalid value: 0: the autoscaler writes every count from minReplicas to maxReplicas to spec.instances, and the CRD's schema requires a value of at least 1 (minimum); set minReplicas to 1 or more; this kind cannot be scaled to zero"}}
		if diff := cmp.Diff(want, resp.Result.Details.Causes); diff != "" {
			t.Errorf("%s: causes (-want +got):\n%s", req.Operation, diff)
		}
	}
	if resp := h.Handle(context.Background(), create(v, set(`{"minReplicas":1,"maxReplicas":5,"idle":{"timeoutSeconds":300}}`))); !resp.Allowed {
		t.Errorf("a range the schema accepts refused: %s", resp.Result.Message)
	}
}

// TestScaleRefusalsNameTheKindsOwnFields: a /scale write lands in the
// kind's own replicas field, so its refusals name that field (as the API
// server's refusal would), and their advice names the config where the
// profile keeps it. A count the field's schema refuses is refused plainly:
// no change of the scale config could make it writable.
func TestScaleRefusalsNameTheKindsOwnFields(t *testing.T) {
	v := instanceSetView(t)
	set := func(ann string) *objBuilder {
		return makeObj("InstanceSet", "pg").set(".spec.instances", 3).annotate(annotationKey, ann)
	}
	tests := []struct {
		name     string
		parent   *objBuilder
		replicas int32
		want     string
	}{{
		name:     "to zero, which the schema refuses",
		parent:   set(`{"minReplicas":3,"maxReplicas":3}`),
		replicas: 0,
		want:     "Invalid value: 0: spec.instances cannot be 0: the CRD's schema requires a value of at least 1 (minimum); this kind cannot be scaled to 0; scale to a count from 1 to 10",
	}, {
		name:     "above the schema's maximum",
		parent:   set(`{"minReplicas":1,"maxReplicas":5}`),
		replicas: 11,
		want:     "Invalid value: 11: spec.instances cannot be 11: the CRD's schema requires a value of at most 10 (maximum); this kind cannot be scaled to 11; scale to a count from 1 to 10",
	}, {
		name:     "above the range",
		parent:   set(`{"minReplicas":2,"maxReplicas":5}`),
		replicas: 7,
		want:     "Invalid value: 7: outside the autoscaling range [2, 5] of the annotation scaleplane.io/scale-config; raise maxReplicas in the annotation scaleplane.io/scale-config to 7 or more, or pin the config (minReplicas = maxReplicas) to scale by hand",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := NewScaleValidator(v, parents(tc.parent), nil).Handle(context.Background(), scaleRequest(v, "pg", 3, tc.replicas, "100"))
			if resp.Allowed {
				t.Fatalf("allowed, want %q", tc.want)
			}
			want := []metav1.StatusCause{{Type: invalidValue, Field: "spec.instances", Message: tc.want}}
			if diff := cmp.Diff(want, resp.Result.Details.Causes); diff != "" {
				t.Errorf("causes (-want +got):\n%s", diff)
			}
		})
	}
}
