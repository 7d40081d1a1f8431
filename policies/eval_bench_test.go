package policies

import (
	"context"
	"testing"

	"runtime"
	"strings"
	"syscall"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types/ref"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/profile/profiletest"
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

// validator is a set's validating policy compiled by the API server's own
// CEL compiler, evaluated as the API server evaluates it on a CREATE.
type validator struct {
	compiler *plugincel.CompositedCompiler
	eval     plugincel.ConditionEvaluator
	p        *profile.Compiled
}

func newValidator(tb testing.TB, p *profile.Compiled, withMessage bool) validator {
	tb.Helper()
	s := For(p)
	c, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		tb.Fatal(err)
	}
	opts := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	var vars []plugincel.NamedExpressionAccessor
	for _, v := range s.Validating.Spec.Variables {
		vars = append(vars, expression{v.Name, v.Expression, cel.AnyType})
	}
	c.CompileAndStoreVariables(vars, opts, environment.StoredExpressions)
	// The checks are the match condition (it holds when one fails,
	// after the ratchet, which holds on a CREATE); the validation refuses
	// whatever reaches it.
	mc := s.Validating.Spec.MatchConditions[len(s.Validating.Spec.MatchConditions)-1]
	v := s.Validating.Spec.Validations[0]
	exprs := []plugincel.ExpressionAccessor{expression{"", "!(" + mc.Expression + ")", cel.BoolType}}
	if withMessage {
		exprs = append(exprs, expression{"", v.MessageExpression, cel.StringType})
	}
	return validator{compiler: c, eval: c.CompileCondition(exprs, opts, environment.StoredExpressions), p: p}
}

// validate is whether u passes the checks and, with the message, the
// refusal's message (evaluated either way, empty when nothing is wrong).
func (v validator) validate(tb testing.TB, u *unstructured.Unstructured) (bool, string) {
	tb.Helper()
	gvk, gvr := v.p.GVK(), v.p.GVR()
	attrs := &admission.VersionedAttributes{
		Attributes:      admission.NewAttributesRecord(u, nil, gvk, u.GetNamespace(), u.GetName(), gvr, "", admission.Create, nil, false, nil),
		VersionedObject: admission.NewLazyObject(u), VersionedKind: gvk,
	}
	request := plugincel.CreateAdmissionRequest(attrs.Attributes, metav1.GroupVersionResource(gvr), metav1.GroupVersionKind(gvk))
	res, _, err := v.eval.ForInput(v.compiler.CreateContext(context.Background()), attrs, request, plugincel.OptionalVariableBindings{}, nil, celconfig.RuntimeCELCostBudget)
	if err != nil {
		tb.Fatal(err)
	}
	for _, r := range res {
		if r.Error != nil {
			tb.Fatalf("%s: %v", r.ExpressionAccessor.GetExpression(), r.Error)
		}
	}
	if len(res) == 1 {
		return res[0].EvalResult.Value() == true, ""
	}
	return res[0].EvalResult.Value() == true, res[1].EvalResult.Value().(string)
}

// BenchmarkValidatingPolicy evaluates the sample RackedCluster's
// validating policy on a valid object with the API server's own CEL
// evaluator, as far as the API server evaluates it for a valid object
// (its checks, the match condition that skips the rest): the CEL share of
// the policy's cost per write.
func BenchmarkValidatingPolicy(b *testing.B) {
	v := newValidator(b, compile(b, sample(b, "RackedCluster")), false)
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(benchObject)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for range b.N {
		if ok, msg := v.validate(b, u); !ok {
			b.Fatal(msg)
		}
	}
}

// TestValidationRefusesExactlyWhatItsCausesName: the validation (the
// checks as one boolean) refuses exactly the objects for which the
// message (the causes' sentences) names a cause, for valid objects and
// for each rule broken, on every profile shape. The two are written
// separately for speed; this holds them together without an API server.
func TestValidationRefusesExactlyWhatItsCausesName(t *testing.T) {
	annotation := profiletest.ZonedDatabase()
	cases := map[string][]string{
		"RackedCluster": {
			benchObject,
			`{"spec":{}}`,
			`{"spec":{"replicas":1001}}`,
			`{"spec":{"replicas":-1}}`,
			`{"spec":{"scaleConfig":{"minReplicas":5,"maxReplicas":3}}}`,
			`{"spec":{"scaleConfig":{"maxReplicas":-1}}}`,
			`{"spec":{"scaleConfig":{"minReplicas":0,"maxReplicas":3}}}`,
			`{"spec":{"scaleConfig":{"minReplicas":0,"maxReplicas":3,"idle":{}}}}`,
			`{"spec":{"scaleConfig":{"behavior":{"scaleUp":{"stabilizationWindowSeconds":4000}}}}}`,
			`{"spec":{"scaleConfig":{"behavior":{"scaleDown":{"selectPolicy":"Fastest"}}}}}`,
			`{"spec":{"scaleConfig":{"behavior":{"scaleDown":{"policies":[]}}}}}`,
			`{"spec":{"scaleConfig":{"behavior":{"scaleUp":{"policies":[{"type":"Nodes","value":1,"periodSeconds":1}]}}}}}`,
			`{"spec":{"scaleConfig":{"behavior":{"scaleUp":{"policies":[{"type":"Pods","value":0,"periodSeconds":1}]}}}}}`,
			`{"spec":{"scaleConfig":{"behavior":{"scaleUp":{"policies":[{"type":"Pods","value":1}]}}}}}`,
			`{"spec":{"scaleConfig":{"behavior":{"scaleUp":{"policies":[{"type":"Pods","value":1,"periodSeconds":1801}]}}}}}`,
			`{"spec":{"racks":[{"name":"a"},{"name":"a"}]}}`,
			`{"spec":{"racks":[{"name":"a"},{}]}}`,
			`{"spec":{"racks":[{"name":"a","members":-1}]}}`,
			`{"spec":{"racks":[{"name":"rack a"}]}}`,
			`{"spec":{"racks":["a",{"name":"b","members":"two"}]}}`,
		},
		"ZonedDatabase": {
			`{"spec":{"topology":{"replicasPerZone":3,"zones":[{"zoneName":"a","size":3}]}}}`,
			`{"spec":{"topology":{"replicasPerZone":51}}}`,
			`{"spec":{"topology":{"zones":[{"zoneName":"a"},{"zoneName":"a"},{"size":1}]}}}`,
		},
	}
	for kind, objects := range cases {
		spec := annotation
		if kind != "ZonedDatabase" {
			spec = sample(t, kind)
		}
		p := compile(t, spec)
		v := newValidator(t, p, true)
		for _, o := range objects {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON([]byte(o)); err != nil {
				// Only the spec is given: the kind's own header.
				u = &unstructured.Unstructured{}
				_ = u.UnmarshalJSON([]byte(`{"apiVersion":"` + p.GVK().GroupVersion().String() + `","kind":"` + kind + `",` + o[1:]))
			}
			ok, msg := v.validate(t, u)
			if ok != (msg == "") {
				t.Errorf("%s %s: the validation says ok=%v, the message %q", kind, o, ok, msg)
			}
		}
	}
}

// evaluator is one expression compiled and evaluated as the API server
// does on a CREATE.
type evaluator struct {
	compiler *plugincel.CompositedCompiler
	eval     plugincel.ConditionEvaluator
	p        *profile.Compiled
}

func newEvaluator(tb testing.TB, p *profile.Compiled, e plugincel.ExpressionAccessor) evaluator {
	tb.Helper()
	c, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		tb.Fatal(err)
	}
	opts := plugincel.OptionalVariableDeclarations{HasAuthorizer: true, HasPatchTypes: true}
	return evaluator{compiler: c, eval: c.CompileCondition([]plugincel.ExpressionAccessor{e}, opts, environment.StoredExpressions), p: p}
}

func (v evaluator) run(tb testing.TB, u *unstructured.Unstructured) (ref.Val, int64) {
	gvk, gvr := v.p.GVK(), v.p.GVR()
	attrs := &admission.VersionedAttributes{
		Attributes:      admission.NewAttributesRecord(u, nil, gvk, u.GetNamespace(), u.GetName(), gvr, "", admission.Create, nil, false, nil),
		VersionedObject: admission.NewLazyObject(u), VersionedKind: gvk,
	}
	request := plugincel.CreateAdmissionRequest(attrs.Attributes, metav1.GroupVersionResource(gvr), metav1.GroupVersionKind(gvk))
	res, left, err := v.eval.ForInput(v.compiler.CreateContext(context.Background()), attrs, request, plugincel.OptionalVariableBindings{}, nil, celconfig.RuntimeCELCostBudget)
	if err != nil {
		tb.Fatal(err)
	}
	if res[0].Error != nil {
		tb.Fatal(res[0].Error)
	}
	return res[0].EvalResult, celconfig.RuntimeCELCostBudget - left
}

// threadCPU is the calling thread's CPU time (ns).
func threadCPU(tb testing.TB) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		tb.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// rusageThread is Linux's RUSAGE_THREAD.
const rusageThread = 1

// benchDefaulting is benchObject as BenchmarkCreateLatency's
// "defaulting" shape sends it: racks away from R, which M5 fans out.
var benchDefaulting = strings.Replace(benchObject, `{"name":"a","members":3},{"name":"b","members":3},{"name":"c","members":3}`, `{"name":"a","members":1},{"name":"b","members":2},{"name":"c","members":5}`, 1)

// BenchmarkPolicyConditions evaluates, one at a time, every match
// condition of the sample RackedCluster's policies, and the mutation, on
// a CREATE of benchObject (already defaulted) and of benchDefaulting,
// with the API server's own CEL evaluator: what each costs the API
// server per write.
func BenchmarkPolicyConditions(b *testing.B) {
	p := compile(b, sample(b, "RackedCluster"))
	s := For(p)
	type expr struct {
		name, text string
		returns    *cel.Type
	}
	var exprs []expr
	for _, mc := range s.Mutating.Spec.MatchConditions {
		exprs = append(exprs, expr{"mutating-" + mc.Name, mc.Expression, cel.BoolType})
	}
	exprs = append(exprs, expr{"mutation", s.Mutating.Spec.Mutations[0].JSONPatch.Expression, nil})
	for _, mc := range s.Validating.Spec.MatchConditions {
		exprs = append(exprs, expr{"validating-" + mc.Name, mc.Expression, cel.BoolType})
	}
	for _, shape := range []struct{ name, body string }{{"defaulted", benchObject}, {"defaulting", benchDefaulting}} {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(shape.body)); err != nil {
			b.Fatal(err)
		}
		for _, e := range exprs {
			b.Run(shape.name+"/"+e.name, func(b *testing.B) {
				var acc plugincel.ExpressionAccessor = expression{"", e.text, e.returns}
				if e.returns == nil {
					acc = &patch.JSONPatchCondition{Expression: e.text}
				}
				ev := newEvaluator(b, p, acc)
				b.ReportAllocs()
				var cost int64
				// The thread's CPU time too: wall time is noisy on a loaded
				// machine.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu0 := threadCPU(b)
				for range b.N {
					_, cost = ev.run(b, u)
				}
				b.ReportMetric(float64(threadCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
				// The evaluator's cost: about one per node evaluated.
				b.ReportMetric(float64(cost), "cost")
			})
		}
	}
}
