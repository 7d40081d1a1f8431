package webhooks

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/scaleplane/scaleplane/scaling"
)

// cause is what a test asserts of a refusal's cause: its type and field path.
type cause struct {
	Type  metav1.CauseType
	Field string
}

func causes(st *metav1.Status) []cause {
	if st == nil || st.Details == nil {
		return nil
	}
	var out []cause
	for _, c := range st.Details.Causes {
		out = append(out, cause{c.Type, c.Field})
	}
	return out
}

const (
	invalidValue  = metav1.CauseTypeFieldValueInvalid
	required      = metav1.CauseTypeFieldValueRequired
	notSupported  = metav1.CauseTypeFieldValueNotSupported
	duplicate     = metav1.CauseTypeFieldValueDuplicate
	forbidden     = metav1.CauseTypeForbidden
	scaleConfig   = "spec.scaleConfig"
	annotationCfg = "metadata.annotations[scaleplane.io/scale-config]"
)

func TestValidate(t *testing.T) {
	views := testViews(t)
	rc := func() *objBuilder { return makeObj(rackedCluster, "db").replicas(3).groups("a", 3, "b", 3) }
	withConfig := func(mutate func(c obj)) *objBuilder {
		c := fullConfig()
		mutate(c)
		return rc().config(c)
	}
	scaleUp := func(c obj) obj { return c["behavior"].(obj)["scaleUp"].(obj) }
	tests := []struct {
		name string
		kind string
		req  func() admission.Request
		// want are the causes of a 422; nil means allowed.
		want []cause
		// wantWarnings are substrings, one per expected warning.
		wantWarnings []string
	}{{
		name: "valid: full config with metrics",
		kind: rackedCluster,
		req:  func() admission.Request { return create(views[rackedCluster], rc().config(fullConfig())) },
	}, {
		name: "valid: full config with triggers, range from zero",
		kind: workerGroup,
		req: func() admission.Request {
			return create(views[workerGroup], makeObj(workerGroup, "wg").replicas(3).config(fullTriggerConfig()))
		},
	}, {
		name: "valid: pinned at zero (scaled to zero by hand)",
		kind: rackedCluster,
		req: func() admission.Request {
			return create(views[rackedCluster], makeObj(rackedCluster, "db").replicas(0).config(obj{"minReplicas": 0, "maxReplicas": 0}).groups("a", 0))
		},
	}, {
		name: "V1: negative replicas",
		kind: rackedCluster,
		req:  func() admission.Request { return create(views[rackedCluster], rc().replicas(-1)) },
		want: []cause{{invalidValue, "spec.replicas"}},
	}, {
		name: "V1: replicas above the profile's bound",
		kind: zonedDatabase,
		req: func() admission.Request {
			return create(views[zonedDatabase], makeObj(zonedDatabase, "zdb").replicas(51))
		},
		want: []cause{{invalidValue, "spec.topology.replicasPerZone"}},
	}, {
		name: "V2: minReplicas above maxReplicas",
		kind: rackedCluster,
		req: func() admission.Request {
			return create(views[rackedCluster], rc().config(obj{"minReplicas": 5, "maxReplicas": 2}))
		},
		want: []cause{{invalidValue, scaleConfig + ".minReplicas"}},
	}, {
		name: "V2: a range from zero needs triggers or idle",
		kind: function,
		req: func() admission.Request {
			return create(views[function], makeObj(function, "fn").config(obj{"minReplicas": 0, "maxReplicas": 3}))
		},
		want: []cause{{invalidValue, scaleConfig + ".minReplicas"}},
	}, {
		name: "V3: Utilization target on a Pods metric",
		kind: rackedCluster,
		req: func() admission.Request {
			return create(views[rackedCluster], withConfig(func(c obj) {
				c["metrics"] = list{obj{"type": "Pods", "pods": obj{"metric": obj{"name": "rps"}, "target": obj{"type": "Utilization", "averageUtilization": 50}}}}
			}))
		},
		want: []cause{{notSupported, scaleConfig + ".metrics[0].pods.target.type"}},
	}, {
		name: "V4: periodSeconds 0 and 1801, selectPolicy Fastest",
		kind: rackedCluster,
		req: func() admission.Request {
			return create(views[rackedCluster], withConfig(func(c obj) {
				scaleUp(c)["selectPolicy"] = "Fastest"
				scaleUp(c)["policies"] = list{
					obj{"type": "Pods", "value": 4, "periodSeconds": 0},
					obj{"type": "Percent", "value": 100, "periodSeconds": 1801},
				}
			}))
		},
		want: []cause{
			{notSupported, scaleConfig + ".behavior.scaleUp.selectPolicy"},
			{invalidValue, scaleConfig + ".behavior.scaleUp.policies[0].periodSeconds"},
			{invalidValue, scaleConfig + ".behavior.scaleUp.policies[1].periodSeconds"},
		},
	}, {
		name: "V5: two queries the source refuses (stubQuerySource)",
		kind: workerGroup,
		req: func() admission.Request {
			c := fullTriggerConfig()
			c["triggers"] = list{
				obj{"name": "a", "type": "Value", "query": stubRefusal + "does not parse", "threshold": 1},
				obj{"name": "b", "type": "Value", "query": stubRefusal + "yields a range vector", "threshold": 1},
			}
			return create(views[workerGroup], makeObj(workerGroup, "wg").replicas(1).config(c))
		},
		want: []cause{
			{invalidValue, "spec.scalePolicy.triggers[0].query"},
			{invalidValue, "spec.scalePolicy.triggers[1].query"},
		},
	}, {
		name: "V6: metrics and triggers together",
		kind: rackedCluster,
		req: func() admission.Request {
			return create(views[rackedCluster], withConfig(func(c obj) { c["triggers"] = fullTriggerConfig()["triggers"] }))
		},
		want: []cause{{forbidden, scaleConfig + ".triggers"}},
	}, {
		name: "V7: bad time zone and 25:00",
		kind: rackedCluster,
		req: func() admission.Request {
			return create(views[rackedCluster], withConfig(func(c obj) {
				c["schedule"] = obj{"timeZone": "Mars/Olympus", "wakeUp": list{"25:00"}}
			}))
		},
		want: []cause{
			{invalidValue, scaleConfig + ".schedule.timeZone"},
			{invalidValue, scaleConfig + ".schedule.wakeUp[0]"},
		},
	}, {
		name: "V8: duplicate rack names and negative members",
		kind: rackedCluster,
		req: func() admission.Request {
			return create(views[rackedCluster], makeObj(rackedCluster, "db").groups("a", 1, "a", -2))
		},
		want: []cause{{duplicate, "spec.racks[1].name"}, {invalidValue, "spec.racks[1].members"}},
	}, {
		name: "V8 on the foreign kind reports its own field names",
		kind: zonedDatabase,
		req: func() admission.Request {
			return create(views[zonedDatabase], makeObj(zonedDatabase, "zdb").groups("", 1, "eu", -1))
		},
		want: []cause{{required, "spec.topology.zones[0].zoneName"}, {invalidValue, "spec.topology.zones[1].size"}},
	}, {
		name: "V9: unknown field in an annotation config",
		kind: zonedDatabase,
		req: func() admission.Request {
			return create(views[zonedDatabase], makeObj(zonedDatabase, "zdb").replicas(2).annotate(annotationKey, `{"minReplicas":2,"maxReplicas":2,"maxReplica":4}`))
		},
		want: []cause{{invalidValue, annotationCfg + ".maxReplica"}},
	}, {
		name: "a field of the wrong type",
		kind: rackedCluster,
		req: func() admission.Request {
			return create(views[rackedCluster], makeObj(rackedCluster, "db").set(".spec.replicas", "three"))
		},
		want: []cause{{invalidValue, "spec.replicas"}},
	}, {
		name: "every problem of one object in one refusal",
		kind: rackedCluster,
		req: func() admission.Request {
			return create(views[rackedCluster], makeObj(rackedCluster, "db").replicas(-1).
				config(obj{"minReplicas": 4, "maxReplicas": 2}).groups("a", 1, "a", 1))
		},
		want: []cause{
			{invalidValue, "spec.replicas"},
			{invalidValue, scaleConfig + ".minReplicas"},
			{duplicate, "spec.racks[1].name"},
		},
	}, {
		name:         "W1: replicas outside the range is a warning",
		kind:         rackedCluster,
		req:          func() admission.Request { return create(views[rackedCluster], rc().replicas(12).config(fullConfig())) },
		wantWarnings: []string{"spec.replicas (12) is outside spec.scaleConfig [2, 9]"},
	}, {
		name: "W1 for pins: a pin that disagrees with replicas will follow them",
		kind: rackedCluster,
		req: func() admission.Request {
			return create(views[rackedCluster], rc().replicas(5).config(obj{"minReplicas": 3, "maxReplicas": 3}).groups("a", 5))
		},
		wantWarnings: []string{"is pinned at 3 while spec.replicas is 5"},
	}, {
		name: "W2: a range is ignored while a Function has replicas",
		kind: function,
		req: func() admission.Request {
			return create(views[function], makeObj(function, "fn").replicas(2).config(obj{"minReplicas": 1, "maxReplicas": 4}))
		},
		wantWarnings: []string{"spec.scaleConfig is ignored while spec.replicas is set"},
	}, {
		name: "warnings travel with a refusal too",
		kind: rackedCluster,
		req: func() admission.Request {
			return create(views[rackedCluster], rc().replicas(12).config(fullConfig()).groups("a", 12, "a", 12))
		},
		want:         []cause{{duplicate, "spec.racks[1].name"}},
		wantWarnings: []string{"spec.replicas (12) is outside"},
	}, {
		name: "ratchet: an update that keeps invalid scaling fields is allowed, with the old problems as warnings",
		kind: rackedCluster,
		req: func() admission.Request {
			old := makeObj(rackedCluster, "db").replicas(3).groups("a", 3, "a", 3)
			cur := makeObj(rackedCluster, "db").replicas(3).groups("a", 3, "a", 3)
			cur.o["metadata"].(obj)["finalizers"] = list{}
			return update(views[rackedCluster], old, cur)
		},
		wantWarnings: []string{"kept unchanged although invalid: spec.racks[1].name: Duplicate value"},
	}, {
		name: "ratchet: racks the mutating webhook fanned out count as unchanged",
		kind: zonedDatabase,
		req: func() admission.Request {
			old := makeObj(zonedDatabase, "zdb").replicas(60).groups("z", 1)
			cur := makeObj(zonedDatabase, "zdb").replicas(60).groups("z", 60)
			return update(views[zonedDatabase], old, cur)
		},
		wantWarnings: []string{"kept unchanged although invalid: spec.topology.replicasPerZone"},
	}, {
		name: "no ratchet when the update changes a scaling field",
		kind: rackedCluster,
		req: func() admission.Request {
			old := makeObj(rackedCluster, "db").replicas(3).groups("a", 3, "a", 3)
			cur := makeObj(rackedCluster, "db").replicas(4).groups("a", 4, "a", 4)
			return update(views[rackedCluster], old, cur)
		},
		want: []cause{{duplicate, "spec.racks[1].name"}},
	}, {
		name: "an update from a valid object to an invalid one is refused",
		kind: workerGroup,
		req: func() admission.Request {
			old := makeObj(workerGroup, "wg").replicas(2).config(obj{"minReplicas": 2, "maxReplicas": 4})
			cur := makeObj(workerGroup, "wg").replicas(2).config(obj{"minReplicas": 2, "maxReplicas": 1})
			return update(views[workerGroup], old, cur)
		},
		want: []cause{{invalidValue, "spec.scalePolicy.minReplicas"}},
	}, {
		name: "DELETE is allowed",
		kind: rackedCluster,
		req: func() admission.Request {
			return request(views[rackedCluster], admissionv1.Delete, "db", nil, makeObj(rackedCluster, "db").replicas(-1).raw())
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := NewValidator(views[tc.kind], testSources()).Handle(context.Background(), tc.req())
			if len(resp.Patches) > 0 || resp.PatchType != nil {
				t.Errorf("a validating response carries a patch: %+v", resp.Patches)
			}
			if tc.want == nil && !resp.Allowed {
				t.Fatalf("refused: %s", resp.Result.Message)
			}
			if tc.want != nil {
				if resp.Allowed {
					t.Fatalf("allowed, want a refusal with %v", tc.want)
				}
				st := resp.Result
				if st.Code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid {
					t.Errorf("code %d reason %q, want 422 Invalid", st.Code, st.Reason)
				}
				gvk := views[tc.kind].GVK()
				if st.Details == nil || st.Details.Kind != gvk.Kind || st.Details.Group != gvk.Group || st.Details.Name == "" {
					t.Errorf("details %+v do not name the %s", st.Details, gvk.Kind)
				}
				if diff := cmp.Diff(tc.want, causes(st)); diff != "" {
					t.Errorf("causes (-want +got):\n%s\nmessage: %s", diff, st.Message)
				}
			}
			if len(resp.Warnings) != len(tc.wantWarnings) {
				t.Fatalf("warnings %q, want %d containing %q", resp.Warnings, len(tc.wantWarnings), tc.wantWarnings)
			}
			for i, w := range tc.wantWarnings {
				if !strings.Contains(resp.Warnings[i], w) {
					t.Errorf("warning %d %q does not contain %q", i, resp.Warnings[i], w)
				}
			}
		})
	}
}

// TestV10V11Admission: every query the trigger source refuses (over a cost
// bound, V10) and every reference that does not resolve (V11) is refused by
// the validating webhook in one 422, each at its field path with the
// source's message or the allowed values. The query source is
// stubQuerySource; the PromQL source's own messages are held in module
// controllers/autoscaler (TestV10PromQLSourceCost,
// TestV11PromQLSourceReferences). With no
// trigger sources (a webhook beside no trigger autoscaler) any trigger is
// refused.
func TestV10V11Admission(t *testing.T) {
	views := testViews(t)
	const tp = "spec.scalePolicy.triggers"
	wg := func(c obj) admission.Request {
		return create(views[workerGroup], makeObj(workerGroup, "wg").replicas(1).config(c))
	}
	withTriggers := func(ts ...obj) obj {
		c := fullTriggerConfig()
		c["triggers"] = list{}
		for _, tr := range ts {
			c["triggers"] = append(c["triggers"].(list), tr)
		}
		return c
	}
	query := func(name, q string) obj { return obj{"name": name, "type": "AverageValue", "query": q, "threshold": 1} }
	type want struct {
		Type     metav1.CauseType
		Field    string
		Contains string
	}
	tests := []struct {
		name    string
		sources *scaling.Sources
		req     admission.Request
		want    []want
	}{{
		name: "V10 every cost bound in one refusal",
		req: wg(withTriggers(
			query("subquery", stubRefusal+"needs 315360000001 points per series, over the limit of 11000"),
			query("long", stubRefusal+"is 120001 bytes long, over the limit of 4096 bytes"),
			query("deep", stubRefusal+"nests 101 levels deep at offset 100, over the limit of 100"),
		)),
		want: []want{
			{invalidValue, tp + "[0].query", "315360000001 points per series, over the limit of 11000"},
			{invalidValue, tp + "[1].query", "120001 bytes long, over the limit of 4096 bytes"},
			{invalidValue, tp + "[2].query", "nests 101 levels deep at offset 100, over the limit of 100"},
		},
	}, {
		name: "V11 every unresolved reference in one refusal",
		req: wg(func() obj {
			c := withTriggers(
				query("typo", stubRefusal+"unknown placeholder ${namspace}"),
				obj{"name": "kafka", "type": "AverageValue", "source": "kafka", "query": "sum(up)", "threshold": 1},
				obj{"name": "cron", "type": "Value", "source": "cron", "threshold": 1, "metadata": obj{"start": "08:00", "end": "19:00", "timeZone": "Europe/Paris"}},
				obj{"name": "url", "type": "Value", "query": "sum(up)", "threshold": 1, "metadata": obj{"serverAddress": "http://10.0.0.1"}},
			)
			c["dependsOn"] = list{"", "wg", "db", "db", "Not_A_Name"}
			return c
		}()),
		want: []want{
			{invalidValue, tp + "[0].query", "unknown placeholder ${namspace}"},
			{notSupported, tp + "[1].source", `supported values: "cron", "promql"`},
			{notSupported, tp + "[2].type", `supported values: "AverageValue"`},
			{notSupported, tp + "[2].metadata[timeZone]", `supported values: "days", "desiredReplicas", "end", "start", "timezone"`},
			{forbidden, tp + "[3].metadata[serverAddress]", "reads no metadata"},
			{required, "spec.scalePolicy.dependsOn[0]", "remove the empty entry"},
			{invalidValue, "spec.scalePolicy.dependsOn[1]", "cannot depend on itself"},
			{duplicate, "spec.scalePolicy.dependsOn[3]", ""},
			{invalidValue, "spec.scalePolicy.dependsOn[4]", "must be the name of a workload"},
		},
	}, {
		name: "V11 group names in the /scale selector",
		req:  create(views[rackedCluster], makeObj(rackedCluster, "db").replicas(2).config(obj{"minReplicas": 1, "maxReplicas": 4}).groups("rack/a", 1, "rack-b", 1)),
		want: []want{{invalidValue, "spec.racks[0].name", "group names are label values of the pods' selector"}},
	}, {
		name:    "V11 no trigger autoscaler",
		sources: scaling.NewSources(),
		req:     wg(withTriggers(query("rps", "sum(up)"))),
		want:    []want{{forbidden, tp + "[0]", "this scaleplane has no trigger autoscaler"}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sources := tc.sources
			if sources == nil {
				sources = testSources()
			}
			kind := workerGroup
			if strings.Contains(tc.name, "group names") {
				kind = rackedCluster
			}
			resp := NewValidator(views[kind], sources).Handle(context.Background(), tc.req)
			if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity {
				t.Fatalf("allowed %v code %d, want a 422: %s", resp.Allowed, resp.Result.Code, resp.Result.Message)
			}
			var got []want
			for i, c := range resp.Result.Details.Causes {
				w := want{c.Type, c.Field, ""}
				if i < len(tc.want) && strings.Contains(c.Message, tc.want[i].Contains) {
					w.Contains = tc.want[i].Contains
				} else {
					w.Contains = c.Message
				}
				got = append(got, w)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("causes (-want +got):\n%s", diff)
			}
		})
	}
}
