package policies

import (
	"testing"

	"github.com/google/cel-go/cel"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile/profiletest"
)

// expression is one CEL expression of a policy, as the API server's
// compiler takes it.
type expression struct {
	name, text string
	returns    *cel.Type
}

func (e expression) GetExpression() string    { return e.text }
func (e expression) ReturnTypes() []*cel.Type { return []*cel.Type{e.returns} }
func (e expression) GetName() string          { return e.name }

// TestExpressionsCompile compiles every expression of every profile's
// policies with the API server's own CEL compiler and environment, as it
// does when a policy is created: a syntax error, an undeclared name or a
// wrong result type fails here rather than in an e2e run.
func TestExpressionsCompile(t *testing.T) {
	dashed := sample(t, "WorkerGroup")
	dashed.ScaleConfig.Path = ".spec.scale-policy"
	for _, spec := range []v1alpha1.ScaleProfileSpec{sample(t, "RackedCluster"), sample(t, "Function"), sample(t, "WorkerGroup"), profiletest.ZonedDatabase(), dashed} {
		t.Run(spec.Target.Kind+spec.ScaleConfig.Path, func(t *testing.T) {
			s := For(compile(t, spec))
			c, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
			if err != nil {
				t.Fatal(err)
			}
			opts := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
			check := func(what string, r plugincel.CompilationResult) {
				t.Helper()
				if r.Error != nil {
					t.Errorf("%s: %v", what, r.Error)
				}
			}
			for _, v := range s.Validating.Spec.Variables {
				check("variable "+v.Name, c.CompileAndStoreVariable(expression{v.Name, v.Expression, cel.AnyType}, opts, environment.NewExpressions))
			}
			for _, m := range s.Validating.Spec.MatchConditions {
				check("matchCondition "+m.Name, c.CompileCELExpression(expression{m.Name, m.Expression, cel.BoolType}, opts, environment.NewExpressions))
			}
			for _, v := range s.Validating.Spec.Validations {
				check("validation", c.CompileCELExpression(expression{"", v.Expression, cel.BoolType}, opts, environment.NewExpressions))
				check("messageExpression", c.CompileCELExpression(expression{"", v.MessageExpression, cel.StringType}, opts, environment.NewExpressions))
			}
			m, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
			if err != nil {
				t.Fatal(err)
			}
			for _, mc := range s.Mutating.Spec.MatchConditions {
				check("matchCondition "+mc.Name, m.CompileCELExpression(expression{mc.Name, mc.Expression, cel.BoolType}, opts, environment.NewExpressions))
			}
			patchOpts := opts
			patchOpts.HasPatchTypes = true
			for i, mut := range s.Mutating.Spec.Mutations {
				check(s.Rules[min(i, len(s.Rules)-1)]+" mutation", m.CompileCELExpression(&patch.JSONPatchCondition{Expression: mut.JSONPatch.Expression}, patchOpts, environment.NewExpressions))
			}
		})
	}
}
