package policies

import (
	"testing"

	"github.com/google/cel-go/cel"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile/profiletest"
)

type object = map[string]any

// TestWebhookCalledOnlyWhereThePoliciesCannotDecide evaluates the webhook
// entries' match condition, compiled by the API server's own CEL compiler,
// on the writes of each kind: a write of R, the bounds, the behavior's
// CEL-checked fields or the groups never calls the webhook; a write that
// adds or changes a trigger, metrics, a tolerance or an annotation's
// config does.
func TestWebhookCalledOnlyWhereThePoliciesCannotDecide(t *testing.T) {
	spec := func(s object) object { return object{"spec": s} }
	annotated := func(config string, s object) object {
		return object{"metadata": object{"annotations": object{v1alpha1.AnnotationScaleConfig: config}}, "spec": s}
	}
	trigger := object{"name": "rps", "type": "AverageValue", "query": "sum(rate(x[1m]))", "threshold": 10}
	ranged := func(extra ...any) object {
		c := object{"minReplicas": 1, "maxReplicas": 4}
		for i := 0; i+1 < len(extra); i += 2 {
			c[extra[i].(string)] = extra[i+1]
		}
		return c
	}
	tests := []struct {
		name     string
		kind     string
		old, cur object
		want     bool
	}{
		{name: "create with replicas and racks", cur: spec(object{"replicas": 3, "racks": []any{object{"name": "a"}}})},
		{name: "create with bounds and behavior", cur: spec(object{"scaleConfig": ranged("behavior", object{"scaleUp": object{"selectPolicy": "Max"}})})},
		{name: "create with a trigger", cur: spec(object{"scaleConfig": ranged("triggers", []any{trigger})}), want: true},
		{name: "create with metrics", cur: spec(object{"scaleConfig": ranged("metrics", []any{object{"type": "Resource"}})}), want: true},
		{name: "create with an unknown config field", cur: spec(object{"scaleConfig": ranged("minReplica", 2)}), want: true},
		{name: "create with a tolerance", cur: spec(object{"scaleConfig": ranged("behavior", object{"scaleDown": object{"tolerance": "0.1"}})}), want: true},
		{name: "create with a config that is not an object", cur: spec(object{"scaleConfig": "2..4"}), want: true},
		{name: "update of replicas beside unchanged triggers",
			old: spec(object{"replicas": 2, "scaleConfig": ranged("triggers", []any{trigger})}),
			cur: spec(object{"replicas": 3, "scaleConfig": ranged("triggers", []any{trigger})})},
		{name: "update of the bounds beside unchanged triggers",
			old: spec(object{"scaleConfig": ranged("triggers", []any{trigger})}),
			cur: spec(object{"scaleConfig": object{"minReplicas": 2, "maxReplicas": 9, "triggers": []any{trigger}}})},
		{name: "update of the bounds beside an unchanged fallback",
			old: spec(object{"scaleConfig": ranged("triggers", []any{trigger}, "fallback", object{"failureThreshold": 3, "replicas": 4})}),
			cur: spec(object{"scaleConfig": object{"minReplicas": 1, "maxReplicas": 2, "triggers": []any{trigger}, "fallback": object{"failureThreshold": 3, "replicas": 4}}}), want: true},
		{name: "update of the bounds beside unchanged idle settings",
			old: spec(object{"scaleConfig": ranged("idle", object{"replicasAtStart": 4})}),
			cur: spec(object{"scaleConfig": object{"minReplicas": 1, "maxReplicas": 2, "idle": object{"replicasAtStart": 4}}}), want: true},
		{name: "create with a fallback", cur: spec(object{"scaleConfig": ranged("triggers", []any{trigger}, "fallback", object{"failureThreshold": 3, "replicas": 4})}), want: true},
		{name: "update of replicas beside an unchanged fallback",
			old: spec(object{"replicas": 2, "scaleConfig": ranged("triggers", []any{trigger}, "fallback", object{"failureThreshold": 3, "replicas": 4})}),
			cur: spec(object{"replicas": 3, "scaleConfig": ranged("triggers", []any{trigger}, "fallback", object{"failureThreshold": 3, "replicas": 4})})},
		{name: "update removing the triggers",
			old: spec(object{"scaleConfig": ranged("triggers", []any{trigger})}),
			cur: spec(object{"scaleConfig": ranged()})},
		{name: "update adding a trigger",
			old: spec(object{"scaleConfig": ranged()}),
			cur: spec(object{"scaleConfig": ranged("triggers", []any{trigger})}), want: true},
		{name: "update changing a trigger's threshold",
			old: spec(object{"scaleConfig": ranged("triggers", []any{trigger})}),
			cur: spec(object{"scaleConfig": ranged("triggers", []any{object{"name": "rps", "type": "AverageValue", "query": "sum(rate(x[1m]))", "threshold": 20}})}), want: true},
		{name: "update adding a config with idle to an object without one",
			old: spec(object{"replicas": 1}),
			cur: spec(object{"replicas": 1, "scaleConfig": ranged("idle", object{"timeoutSeconds": 60})}), want: true},
		{name: "update changing a tolerance",
			old: spec(object{"scaleConfig": ranged("behavior", object{"scaleDown": object{"tolerance": "0.1"}})}),
			cur: spec(object{"scaleConfig": ranged("behavior", object{"scaleDown": object{"tolerance": "0.2"}})}), want: true},
		{name: "annotation: create with a config", kind: "ZonedDatabase", cur: annotated(`{"minReplicas":2}`, object{}), want: true},
		{name: "annotation: create without one", kind: "ZonedDatabase", cur: spec(object{"topology": object{"replicasPerZone": 3}})},
		{name: "annotation: update keeping it", kind: "ZonedDatabase",
			old: annotated(`{"minReplicas":2}`, object{"topology": object{"replicasPerZone": 2}}),
			cur: annotated(`{"minReplicas":2}`, object{"topology": object{"replicasPerZone": 3}})},
		{name: "annotation: update changing it", kind: "ZonedDatabase",
			old: annotated(`{"minReplicas":2}`, object{}), cur: annotated(`{"minReplicas":3}`, object{}), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind := tt.kind
			if kind == "" {
				kind = "RackedCluster"
			}
			spec := profiletest.ZonedDatabase()
			if kind != "ZonedDatabase" {
				spec = sample(t, kind)
			}
			cond := WebhookCondition(compile(t, spec))
			c, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
			if err != nil {
				t.Fatal(err)
			}
			r := c.CompileCELExpression(expression{cond.Name, cond.Expression, cel.BoolType}, plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, environment.NewExpressions)
			if r.Error != nil {
				t.Fatalf("compile %s: %v", cond.Expression, r.Error)
			}
			op := "CREATE"
			var old any
			if tt.old != nil {
				op, old = "UPDATE", tt.old
			}
			out, _, err := r.Program.Eval(map[string]any{"object": tt.cur, "oldObject": old, "request": map[string]any{"operation": op}})
			if err != nil {
				t.Fatalf("evaluate: %v", err)
			}
			if got := out.Value(); got != tt.want {
				t.Errorf("the webhook is called: %v, want %v", got, tt.want)
			}
		})
	}
}
