package policies

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

type obj = map[string]interface{}
type list = []interface{}

// object is an object of view's kind with spec and, when config is set,
// the scale config annotation.
func object(view *profile.Compiled, ns, name string, spec obj, config string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: obj{"spec": spec}}
	u.SetGroupVersionKind(view.GVK())
	u.SetNamespace(ns)
	u.SetName(name)
	if config != "" {
		u.SetAnnotations(map[string]string{v1alpha1.AnnotationScaleConfig: config})
	}
	return u
}

func zone(name string, size ...int64) obj {
	z := obj{"zoneName": name}
	if len(size) > 0 {
		z["size"] = size[0]
	}
	return z
}

func rack(name string, members ...int64) obj {
	r := obj{}
	if name != "" {
		r["name"] = name
	}
	if len(members) > 0 {
		r["members"] = members[0]
	}
	return r
}

// webhookDecision is what scaleplane's webhooks make of u (old is the
// stored object on UPDATE): the object as the mutating webhook leaves it,
// or the validating webhook's causes. It runs the same pure functions the
// webhooks run, so no webhook has to be up.
func webhookDecision(view *profile.Compiled, old, u *unstructured.Unstructured) (*unstructured.Unstructured, field.ErrorList) {
	l := view.Layout()
	w, errs := view.Read(u)
	if len(errs) > 0 {
		return nil, errs
	}
	var ow *scaling.Workload
	if old != nil {
		o, _ := view.Read(old)
		ow = &o
	}
	d := scaling.Default(ow, w, l)
	if verrs, _ := scaling.Validate(d, l, nil); len(verrs) > 0 {
		return nil, verrs
	}
	out := u.DeepCopy()
	if err := view.WriteSpec(out, d); err != nil {
		return nil, field.ErrorList{field.InternalError(nil, err)}
	}
	return out, nil
}

// policyCase is one write, sent to the API server with only the policies
// installed and compared with webhookDecision.
type policyCase struct {
	name string
	// kind is the kind sent; the default is RackedCluster.
	kind string
	// config is the ZonedDatabase's scale config annotation.
	config string
	// stored, when set, is created first and spec is sent as an UPDATE.
	stored obj
	spec   obj
	// difference, when set, says why the policies decide this case
	// differently from the webhook; the test then requires the difference.
	difference string
}

var policyCases = []policyCase{
	{name: "M1 and M5: replicas pins the config and fans out", spec: obj{"replicas": int64(3), "racks": list{rack("a", 1), rack("b")}}},
	{name: "M2: a missing maximum is the larger of minimum and replicas", spec: obj{"replicas": int64(4), "scaleConfig": obj{"minReplicas": int64(2)}, "racks": list{rack("a", 9)}}},
	{name: "M2: an empty config gets both bounds", spec: obj{"replicas": int64(5), "scaleConfig": obj{}}},
	{name: "M2: a maximum of 0 is a pin at zero", spec: obj{"scaleConfig": obj{"maxReplicas": int64(0)}}},
	{name: "M4: a range without replicas starts at its minimum", spec: obj{"scaleConfig": obj{"minReplicas": int64(2), "maxReplicas": int64(8)}, "racks": list{rack("a", 1), rack("b", 7)}}},
	{name: "M6: nothing to default", spec: obj{"replicas": int64(2), "scaleConfig": obj{"minReplicas": int64(2), "maxReplicas": int64(2)}, "racks": list{rack("a", 2)}}},
	{name: "no scaling fields", spec: obj{}},
	{name: "racks without replicas keep their members", spec: obj{"racks": list{rack("a", 1), rack("b", 4)}}},
	{name: "V1: negative replicas", spec: obj{"replicas": int64(-1)}},
	{name: "V1: replicas over the profile's bound", spec: obj{"replicas": int64(1000)}},
	{name: "V2: minimum over maximum", spec: obj{"scaleConfig": obj{"minReplicas": int64(5), "maxReplicas": int64(3)}}},
	{name: "V2: negative maximum", spec: obj{"scaleConfig": obj{"maxReplicas": int64(-1)}}},
	{name: "V2: maximum over the profile's bound", spec: obj{"scaleConfig": obj{"minReplicas": int64(1), "maxReplicas": int64(1000)}}},
	{name: "V2: a range from zero with nothing to wake it", spec: obj{"scaleConfig": obj{"minReplicas": int64(0), "maxReplicas": int64(3)}}},
	{name: "V2: a range from zero with idle settings", spec: obj{"scaleConfig": obj{"minReplicas": int64(0), "maxReplicas": int64(3), "idle": obj{}}}},
	{name: "V8: duplicate group names", spec: obj{"racks": list{rack("a", 1), rack("a", 1)}}},
	{name: "V8: a group without a name", spec: obj{"replicas": int64(1), "racks": list{rack("a"), rack("")}}},
	{name: "V8: negative members", spec: obj{"racks": list{rack("a", -1), rack("b", 0), rack("c", -2)}}},
	{name: "V8: a group name that is not a label value", spec: obj{"racks": list{rack("rack a", 1)}}},
	{name: "V1, V2 and V8 together", spec: obj{"replicas": int64(-1), "scaleConfig": obj{"minReplicas": int64(5), "maxReplicas": int64(3)}, "racks": list{rack("a"), rack("a")}}},
	{name: "V2 and V8 together, every cause in one refusal", spec: obj{"scaleConfig": obj{"minReplicas": int64(5), "maxReplicas": int64(3)}, "racks": list{rack("a", -1), rack("a", 1), rack("")}}},
	{name: "V4: behavior within the HPA's limits", spec: obj{"replicas": int64(2), "scaleConfig": obj{"minReplicas": int64(1), "maxReplicas": int64(4),
		"behavior": obj{"scaleUp": obj{"selectPolicy": "Max", "stabilizationWindowSeconds": int64(60), "policies": list{obj{"type": "Pods", "value": int64(2), "periodSeconds": int64(30)}}}}}}},
	{name: "V4: every limit broken", spec: obj{"replicas": int64(2), "scaleConfig": obj{"minReplicas": int64(1), "maxReplicas": int64(4),
		"behavior": obj{
			"scaleUp":   obj{"selectPolicy": "Fastest", "stabilizationWindowSeconds": int64(4000), "policies": list{obj{"type": "Pods", "value": int64(1)}, obj{"type": "Nodes", "value": int64(0), "periodSeconds": int64(1801)}}},
			"scaleDown": obj{"policies": list{}},
		}}}},
	{name: "V3 stays with the webhook", spec: obj{"replicas": int64(2), "scaleConfig": obj{"minReplicas": int64(1), "maxReplicas": int64(4),
		"metrics": list{obj{"type": "Pods", "pods": obj{"metric": obj{"name": "rps"}, "target": obj{"type": "Utilization", "averageUtilization": int64(50)}}}}}},
		difference: "metrics (V3) are the webhook's: the policy admits what the webhook refuses"},
	{name: "M3: a pin follows replicas", stored: obj{"replicas": int64(3), "racks": list{rack("a"), rack("b")}},
		spec: obj{"replicas": int64(5), "scaleConfig": obj{"minReplicas": int64(3), "maxReplicas": int64(3)}, "racks": list{rack("a", 3), rack("b", 3)}}},
	{name: "M3: a pin changed with replicas stays as written", stored: obj{"replicas": int64(3)},
		spec: obj{"replicas": int64(5), "scaleConfig": obj{"minReplicas": int64(2), "maxReplicas": int64(6)}}},
	{name: "M5: racks edited by hand come back to replicas", stored: obj{"replicas": int64(3), "racks": list{rack("a"), rack("b")}},
		spec: obj{"replicas": int64(3), "scaleConfig": obj{"minReplicas": int64(3), "maxReplicas": int64(3)}, "racks": list{rack("a", 1), rack("b", 7)}}},
	{name: "ZonedDatabase M5: zones follow replicasPerZone", kind: "ZonedDatabase", spec: obj{"topology": obj{"replicasPerZone": int64(3), "zones": list{zone("a", 1), zone("b")}}}},
	{name: "ZonedDatabase V1: over the profile's bound of 50", kind: "ZonedDatabase", spec: obj{"topology": obj{"replicasPerZone": int64(60)}}},
	{name: "ZonedDatabase V8: duplicate and unnamed zones", kind: "ZonedDatabase", spec: obj{"topology": obj{"zones": list{zone("a", 1), zone("a", 2), zone("", 1)}}}},
	{name: "ZonedDatabase: a valid annotation", kind: "ZonedDatabase", config: `{"minReplicas":2,"maxReplicas":2}`, spec: obj{"topology": obj{"replicasPerZone": int64(2)}}},
	{name: "ZonedDatabase V2 in an annotation", kind: "ZonedDatabase", config: `{"minReplicas":5,"maxReplicas":3}`, spec: obj{"topology": obj{"replicasPerZone": int64(4)}},
		difference: "a config in an annotation is JSON the policies do not read (V2, V9): the webhook refuses it, the policies admit it"},
	{name: "ZonedDatabase M2 in an annotation", kind: "ZonedDatabase", config: `{"minReplicas":2}`, spec: obj{"topology": obj{"replicasPerZone": int64(4)}},
		difference: "M2 rewrites an annotation's JSON, which the policies do not write: the webhook stores maxReplicas 4, the policies leave the annotation as sent"},
	{name: "a group count of the wrong type", spec: obj{"replicas": int64(3), "racks": list{obj{"name": "a", "members": "two"}}}},
	{name: "a group that is not an object", spec: obj{"replicas": int64(3), "racks": list{"a"}}},
	{name: "a replicas count of the wrong type", spec: obj{"replicas": "3", "racks": list{rack("a", 1)}}},
	{name: "a bound of the wrong type", spec: obj{"replicas": int64(3), "scaleConfig": obj{"minReplicas": "2"}}},
	{name: "a config that is not an object", spec: obj{"replicas": int64(3), "scaleConfig": "2..4"}},
	{name: "WorkerGroup M4 at its own config path", kind: "WorkerGroup", spec: obj{"size": int64(4), "scalePolicy": obj{"minReplicas": int64(2), "maxReplicas": int64(6)}}},
	{name: "WorkerGroup M1 and V2 at spec.scalePolicy", kind: "WorkerGroup", spec: obj{"replicas": int64(3)}},
	{name: "WorkerGroup V2 at spec.scalePolicy", kind: "WorkerGroup", spec: obj{"scalePolicy": obj{"minReplicas": int64(4), "maxReplicas": int64(2)}}},
	{name: "Function: no M4 with the HPA on a child", kind: "Function", spec: obj{"scaleConfig": obj{"minReplicas": int64(2), "maxReplicas": int64(6)}}},
	{name: "Function M3", kind: "Function", stored: obj{"replicas": int64(2)}, spec: obj{"replicas": int64(4), "scaleConfig": obj{"minReplicas": int64(2), "maxReplicas": int64(2)}}},
	{name: "V8 on update", stored: obj{"replicas": int64(2), "racks": list{rack("a")}},
		spec: obj{"replicas": int64(2), "scaleConfig": obj{"minReplicas": int64(2), "maxReplicas": int64(2)}, "racks": list{rack("a", 2), rack("a", 2)}}},
}

// TestPoliciesDecideAsTheWebhook sends every case to an API server with
// the policies of the three sample kinds and ZonedDatabase and no
// scaleplane at all, and compares what
// it admits, stores and refuses (with the field paths of the causes) with
// the webhook's decision of the same object.
func TestPoliciesDecideAsTheWebhook(t *testing.T) {
	install(t)
	ns := cluster.Namespace(t)
	ctx := context.Background()
	compared, differences := 0, 0
	for i, tc := range policyCases {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("case-%d", i)
			view := racked
			if tc.kind != "" {
				view = views[tc.kind]
			}
			build := func(spec obj) *unstructured.Unstructured { return object(view, ns, name, spec, tc.config) }
			var old *unstructured.Unstructured
			var got *unstructured.Unstructured
			var err error
			if tc.stored != nil {
				if old, err = create(ctx, build(tc.stored)); err != nil {
					t.Fatalf("create the stored object: %v", err)
				}
				got, err = update(ctx, build(tc.spec))
			} else {
				got, err = create(ctx, build(tc.spec))
			}
			want, causes := webhookDecision(view, old, build(tc.spec))
			compared++
			diff := decisionDiff(want, causes, got, err)
			switch {
			case tc.difference == "" && diff != "":
				t.Errorf("the policies decide otherwise than the webhook:\n%s", diff)
			case tc.difference != "" && diff == "":
				t.Errorf("listed as a difference (%s), but the policies decide as the webhook", tc.difference)
			case tc.difference != "":
				differences++
				t.Logf("known difference: %s:\n%s", tc.difference, diff)
			}
		})
	}
	t.Logf("objects compared: %d; known differences: %d", compared, differences)
}

// decisionDiff is empty when the policies' answer (got, err) is the
// webhook's (want, causes): the same stored spec, or a refusal naming every
// cause the webhook names, with its path, value and sentence.
func decisionDiff(want *unstructured.Unstructured, causes field.ErrorList, got *unstructured.Unstructured, err error) string {
	switch {
	case len(causes) > 0 && err == nil:
		return fmt.Sprintf("the webhook refuses (%v), the policies admit %v", causes.ToAggregate(), got.Object["spec"])
	case len(causes) == 0 && err != nil:
		return fmt.Sprintf("the webhook admits %v, the policies refuse: %v", want.Object["spec"], err)
	case err != nil && !fromPolicy(err):
		// The API server's own checks (the CRD's schema, the /scale
		// subresource's replicas) run after mutating admission and before
		// validating admission, so they answer first for webhooks and
		// policies alike: the refusal must name a path the webhook names.
		for _, f := range statusFields(err) {
			for _, c := range causes {
				if f == c.Field {
					return ""
				}
			}
		}
		return fmt.Sprintf("the API server refuses at %v, the webhook at other paths: %v", statusFields(err), causes.ToAggregate())
	case err != nil:
		msg := refusal(err)
		var missing []string
		for _, c := range causes {
			if !strings.Contains(msg, c.Error()) {
				missing = append(missing, c.Error())
			}
		}
		if len(missing) > 0 {
			return fmt.Sprintf("the refusal %q lacks the webhook's causes:\n  %s", msg, strings.Join(missing, "\n  "))
		}
		return ""
	}
	if diff := cmp.Diff(want.Object["spec"], got.Object["spec"]); diff != "" {
		return "spec (-webhook +policies):\n" + diff
	}
	if diff := cmp.Diff(want.GetAnnotations(), got.GetAnnotations()); diff != "" {
		return "annotations (-webhook +policies):\n" + diff
	}
	return ""
}
