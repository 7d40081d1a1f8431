package policies

import (
	"context"
	"testing"

	"github.com/google/cel-go/cel"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
)

// benchObject is the object e2e/admission's BenchmarkCreateLatency
// creates: a full scale config (metrics, behavior, idle, schedule) and
// three racks at R.
const benchObject = `{"apiVersion":"samples.scaleplane.io/v1alpha1","kind":"RackedCluster","metadata":{"name":"bench","namespace":"ns"},
"spec":{"replicas":3,"racks":[{"name":"a","members":3},{"name":"b","members":3},{"name":"c","members":3}],
"scaleConfig":{"minReplicas":2,"maxReplicas":9,
"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":70}}},{"type":"Pods","pods":{"metric":{"name":"requests_per_second"},"target":{"type":"AverageValue","averageValue":"200m"}}}],
"behavior":{"scaleUp":{"stabilizationWindowSeconds":0,"selectPolicy":"Max","policies":[{"type":"Pods","value":4,"periodSeconds":15}]},"scaleDown":{"stabilizationWindowSeconds":300,"policies":[{"type":"Percent","value":10,"periodSeconds":60}]}},
"idle":{"replicasAtStart":2,"timeoutSeconds":600},"schedule":{"timeZone":"Europe/Paris","wakeUp":["07:30"],"scaleDownTimeout":[{"time":"20:00","seconds":300}]}}}}`

// BenchmarkValidatingPolicy evaluates the sample RackedCluster's
// validating policy (its variables and its one validation) on a valid
// object with the API server's own CEL evaluator, as the API server does
// on a CREATE: the CEL share of the policy's cost per write.
func BenchmarkValidatingPolicy(b *testing.B) {
	var spec v1alpha1.ScaleProfileSpec
	for _, p := range profile.Samples() {
		if p.Target.Kind == "RackedCluster" {
			spec = p
		}
	}
	p, err := profile.Compile(spec)
	if err != nil {
		b.Fatal(err)
	}
	s := For(p)
	c, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		b.Fatal(err)
	}
	opts := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	var vars []plugincel.NamedExpressionAccessor
	for _, v := range s.Validating.Spec.Variables {
		vars = append(vars, expression{v.Name, v.Expression, cel.AnyType})
	}
	c.CompileAndStoreVariables(vars, opts, environment.StoredExpressions)
	var exprs []plugincel.ExpressionAccessor
	for _, v := range s.Validating.Spec.Validations {
		exprs = append(exprs, expression{"", v.Expression, cel.BoolType})
	}
	eval := c.CompileCondition(exprs, opts, environment.StoredExpressions)
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(benchObject)); err != nil {
		b.Fatal(err)
	}
	gvk := metav1.GroupVersionKind{Group: "samples.scaleplane.io", Version: "v1alpha1", Kind: "RackedCluster"}
	gvr := metav1.GroupVersionResource{Group: "samples.scaleplane.io", Version: "v1alpha1", Resource: "rackedclusters"}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		attrs := &admission.VersionedAttributes{
			Attributes:      admission.NewAttributesRecord(u, nil, u.GroupVersionKind(), "ns", "bench", u.GroupVersionKind().GroupVersion().WithResource("rackedclusters"), "", admission.Create, nil, false, nil),
			VersionedObject: admission.NewLazyObject(u), VersionedKind: u.GroupVersionKind(),
		}
		request := plugincel.CreateAdmissionRequest(attrs.Attributes, gvr, gvk)
		ctx := c.CreateContext(context.Background())
		res, _, err := eval.ForInput(ctx, attrs, request, plugincel.OptionalVariableBindings{}, nil, celconfig.RuntimeCELCostBudget)
		if err != nil || res[0].Error != nil || res[0].EvalResult.Value() != true {
			b.Fatalf("%v %v %v", err, res[0].Error, res[0].EvalResult)
		}
	}
}
