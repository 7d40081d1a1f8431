package scaling

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// modifiersConfig is a 1..10 range with triggers a and b and the formula
// formula at target 5 per replica.
func modifiersConfig(formula string) *Config {
	c := mkConfig(1, 10).Trigger("a", TargetAverageValue, 100).Trigger("b", TargetValue, 100).Obj()
	c.ScalingModifiers = &ScalingModifiers{Formula: formula, Target: 5}
	c.Behavior = immediate()
	return c
}

// TestFormulaDecidesAsComputedByHand is V13: the count follows the
// formula's value against the modifiers' target, and the triggers' own
// thresholds are not used: (30 + 10) / 2 = 20 at 5 per replica is 4.
func TestFormulaDecidesAsComputedByHand(t *testing.T) {
	tests := []struct {
		formula string
		want    int32
	}{
		{"(a + b) / 2.0", 4},
		{"a > 20.0 ? a : b", 6},
		{"math.greatest([a, b * 4.0])", 8},
		{"a - b * 3.0", 1}, // 0: the range's minimum
	}
	for _, tt := range tests {
		t.Run(tt.formula, func(t *testing.T) {
			h := &History{}
			d := decideNow(modifiersConfig(tt.formula), 1, h, 0, val("a", 30), val("b", 10))
			if d.Desired != tt.want {
				t.Errorf("desired %d, want %d (%s)", d.Desired, tt.want, d.Reason)
			}
			if d.Formula == nil || d.Formula.Problem != "" || len(d.Triggers) != 1 || d.Triggers[0].Name != FormulaTrigger {
				t.Errorf("decision does not explain the formula: %+v", d)
			}
			if diff := cmp.Diff(map[string]float64{"a": 30, "b": 10}, d.Formula.Inputs); diff != "" {
				t.Errorf("inputs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFormulaWithAFailedInputIsOneFailure: an input without a usable value
// makes the formula fail: the count is kept, and with a fallback the
// composite's failures in a row lead to it as one trigger's would (V12).
func TestFormulaWithAFailedInputIsOneFailure(t *testing.T) {
	c := modifiersConfig("a + b")
	h := &History{}
	d := decideNow(c, 3, h, 0, val("a", 30), failed("b", errors.New("connection refused")))
	if d.Desired != 3 || !strings.Contains(d.Formula.Problem, "trigger b: connection refused") {
		t.Errorf("a failed input: desired %d, problem %q; want the count kept and the input named", d.Desired, d.Formula.Problem)
	}
	c.Fallback = &Fallback{FailureThreshold: 1, Replicas: 7}
	h = &History{}
	decideNow(c, 3, h, 0, val("a", 30), noData("b"))
	d = decideNow(c, 3, h, 1, val("a", 30), noData("b"))
	if d.Desired != 7 || d.Fallback == nil || d.Fallback.Triggers[0] != FormulaTrigger {
		t.Errorf("second failure of the formula with failureThreshold 1: desired %d, fallback %+v; want 7 through the formula's fallback", d.Desired, d.Fallback)
	}
	for _, bad := range []TriggerResult{val("b", -100)} {
		d := decideNow(modifiersConfig("a + b"), 3, &History{}, 0, val("a", 30), bad)
		if d.Desired != 3 || !strings.Contains(d.Formula.Problem, "below 0") {
			t.Errorf("a negative result: desired %d, problem %q", d.Desired, d.Formula.Problem)
		}
	}
}

// TestScalingModifiersValidated is V13: every refusal at its path, with
// what to change.
func TestScalingModifiersValidated(t *testing.T) {
	p := func() *field.Path { return field.NewPath("spec", "scalingModifiers") }
	tp := func() *field.Path { return field.NewPath("spec", "triggers") }
	ab := []Trigger{{Name: "a"}, {Name: "b"}}
	tests := []struct {
		name     string
		m        ScalingModifiers
		triggers []Trigger
		field    string
		detail   string
	}{
		{"unknown name", ScalingModifiers{Formula: "a + c", Target: 1}, ab, "spec.scalingModifiers.formula", "undeclared reference to 'c'"},
		{"an int among doubles", ScalingModifiers{Formula: "a + 2", Target: 1}, ab, "spec.scalingModifiers.formula", "write 2.0, not 2"},
		{"not a number", ScalingModifiers{Formula: "a > b", Target: 1}, ab, "spec.scalingModifiers.formula", "gives a bool"},
		{"syntax", ScalingModifiers{Formula: "a +", Target: 1}, ab, "spec.scalingModifiers.formula", "Syntax error"},
		{"too costly", ScalingModifiers{Formula: strings.Repeat("[a, b, a, b, a, b, a, b].map(x, ", 3) + "x" + strings.Repeat(")", 3) + ".size() > 0 ? a : b", Target: 1}, ab, "spec.scalingModifiers.formula", "may cost up to"},
		{"empty", ScalingModifiers{Target: 1}, ab, "spec.scalingModifiers.formula", "CEL expression"},
		{"target", ScalingModifiers{Formula: "a", Target: 0}, ab, "spec.scalingModifiers.target", "> 0"},
		{"metric type", ScalingModifiers{Formula: "a", Target: 1, MetricType: "Utilization"}, ab, "spec.scalingModifiers.metricType", "supported values"},
		{"a name that is no identifier", ScalingModifiers{Formula: "a", Target: 1}, []Trigger{{Name: "a"}, {Name: "queue-depth"}}, "spec.triggers[1].name", "must be an identifier"},
		{"the result's own name", ScalingModifiers{Formula: "a", Target: 1}, []Trigger{{Name: "a"}, {Name: FormulaTrigger}}, "spec.triggers[1].name", "rename the trigger"},
		{"no triggers", ScalingModifiers{Formula: "1.0", Target: 1}, nil, "spec.scalingModifiers", "has none"},
		// Type-checking nested literals costs time that grows with the
		// nesting's cube (about 1 s at 1,000 bytes): refused before it.
		{"lists nested deep", ScalingModifiers{Formula: strings.Repeat("[", 200) + "a" + strings.Repeat("]", 200) + strings.Repeat("[0]", 200), Target: 1}, ab, "spec.scalingModifiers.formula", "nests lists or maps 200 deep"},
		{"maps nested deep", ScalingModifiers{Formula: strings.Repeat("{'k': ", 9) + "a" + strings.Repeat("}", 9) + strings.Repeat("['k']", 9), Target: 1}, ab, "spec.scalingModifiers.formula", "nests lists or maps 9 deep"},
		{"a CEL literal as a name", ScalingModifiers{Formula: "a", Target: 1}, []Trigger{{Name: "a"}, {Name: "true"}}, "spec.triggers[1].name", "reserved in CEL"},
		{"a CEL reserved word as a name", ScalingModifiers{Formula: "a", Target: 1}, []Trigger{{Name: "a"}, {Name: "in"}}, "spec.triggers[1].name", "reserved in CEL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := validateScalingModifiers(&tt.m, tt.triggers, p, tp)
			if len(errs) != 1 || errs[0].Field != tt.field || !strings.Contains(errs[0].Error(), tt.detail) {
				t.Errorf("errors %v; want one at %s saying %q", errs, tt.field, tt.detail)
			}
		})
	}
	if errs := validateScalingModifiers(&ScalingModifiers{Formula: "(a + b) / 2.0", Target: 5}, ab, p, tp); len(errs) != 0 {
		t.Errorf("a valid formula refused: %v", errs)
	}
}

// FuzzFormula: no formula text panics compilation or evaluation, and a
// formula that compiles within the cost bound evaluates within it.
func FuzzFormula(f *testing.F) {
	for _, s := range []string{"a + b", "(a + b) / 2.0", "a > 1.0 ? a : b", "math.greatest([a, b])", "a / 0.0", "[a].map(x, x)[0]", "a +", "\x00", strings.Repeat("(", 200)} {
		f.Add(s, 3.0, 4.0)
	}
	f.Fuzz(func(t *testing.T, formula string, a, b float64) {
		m := &ScalingModifiers{Formula: formula, Target: 1}
		triggers := []Trigger{{Name: "a"}, {Name: "b"}}
		_, _, _ = EvalFormula(m, triggers, []TriggerResult{val("a", a), val("b", b)})
	})
}

// TestFormulaCacheKeepsFormulasApart: the compiled-formula cache tells a
// formula and its trigger names apart, so a formula that fails (stored
// past admission, e.g. with failurePolicy Ignore) never stands for
// another workload's formula whose text and names join to the same
// string.
func TestFormulaCacheKeepsFormulasApart(t *testing.T) {
	if _, err := compileFormula("b\x00b", []string{"c"}); err == nil {
		t.Fatal("a formula with a NUL outside a literal compiled")
	}
	if _, err := compileFormula("b", []string{"b", "c"}); err != nil {
		t.Errorf("formula b over b, c: %v", err)
	}
}

// TestFormulaCacheKeepsAHotFormula: a tenant cycling through more distinct
// formulas than the cache holds evicts the coldest, not a formula that is
// used between them (a ticking workload's).
func TestFormulaCacheKeepsAHotFormula(t *testing.T) {
	names := []string{"a", "b"}
	if _, err := compileFormula("a + b", names); err != nil {
		t.Fatal(err)
	}
	hot, _ := formulaCache.Get(formulaKey{"a + b", "a,b"})
	for i := range 3 * maxCachedFormulas {
		_, _ = compileFormula(fmt.Sprintf("a + %d.0", i), names)
		if i%16 == 0 {
			_, _ = compileFormula("a + b", names) // its workload ticks
		}
	}
	got, ok := formulaCache.Get(formulaKey{"a + b", "a,b"})
	if !ok || got != hot {
		t.Errorf("the hot formula was evicted (in cache: %v)", ok)
	}
	if n := formulaCache.Len(); n > maxCachedFormulas {
		t.Errorf("cache holds %d programs, more than %d", n, maxCachedFormulas)
	}
}

// TestOversizedFormulaRefusalIsClipped: the refusal quotes the first bytes
// of a formula, not a megabyte sent back in the 422.
func TestOversizedFormulaRefusalIsClipped(t *testing.T) {
	m := &ScalingModifiers{Formula: "a + " + strings.Repeat("b + ", 250_000) + "b", Target: 1}
	errs := validateScalingModifiers(m, []Trigger{{Name: "a"}, {Name: "b"}},
		func() *field.Path { return field.NewPath("scalingModifiers") }, func() *field.Path { return field.NewPath("triggers") })
	if len(errs) != 1 || len(errs[0].Error()) > 2048 || !strings.Contains(errs[0].Error(), "bytes in all") {
		t.Errorf("refusal of a %d-byte formula: %d errors, first %d bytes long", len(m.Formula), len(errs), len(errs.ToAggregate().Error()))
	}
}
