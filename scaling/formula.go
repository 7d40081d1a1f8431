package scaling

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/ext"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/lru"
)

// ScalingModifiers (zz_generated.config.go) combine the triggers' values
// into one metric, KEDA's advanced.scalingModifiers (V13): Formula, a CEL
// expression over the triggers' names, gives the value that is compared
// with Target as a trigger of MetricType would be; the triggers' own
// thresholds are then not used.
//
// CEL rather than KEDA's expr-lang: it is already in every Kubernetes
// module graph (the API server's validation rules and admission policies
// run it), it is typed and checked before it runs, and it estimates and
// limits a program's cost, which a formula any tenant writes needs.

// errInputNoData: a formula's input had no data.
var errInputNoData = errors.New("no data")

// FormulaTrigger is the name the formula's result goes by, in decisions,
// the Scaling's triggers and the fallback's failure counts.
const FormulaTrigger = "scalingModifiers"

// Limits of a formula, checked at admission (V13) and again at run time.
const (
	// MaxFormulaLength is the longest formula, in bytes.
	MaxFormulaLength = 1024
	// MaxFormulaNesting is how deep a formula may nest list and map
	// literals: type-checking them takes time growing with the cube of
	// their depth (about 1 s for 1,000 bytes of nested lists), spent
	// before the cost estimate can refuse them.
	MaxFormulaNesting = 8
	// MaxFormulaCost is the most a formula may cost, in CEL's cost units
	// (about one per operation): both its static estimate's upper bound
	// and the cost of one evaluation.
	MaxFormulaCost = 1000
)

// formulaNameRE is what a trigger name must look like to be used in a
// formula: a CEL identifier.
var formulaNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// celReserved are the identifiers CEL keeps for itself (its literals,
// "in" and the words its grammar reserves): a trigger so named could never
// be read by a formula.
var celReserved = map[string]bool{
	"true": true, "false": true, "null": true, "in": true,
	"as": true, "break": true, "const": true, "continue": true, "else": true, "for": true, "function": true,
	"if": true, "import": true, "let": true, "loop": true, "package": true, "namespace": true,
	"return": true, "var": true, "void": true, "while": true,
}

// compiledFormula is a checked program, cached by formula and names.
type compiledFormula struct {
	prg cel.Program
	err error
}

// formulaKey is a formula and its trigger names (identifiers, joined by
// commas, which no identifier holds): a formula's text, whatever it
// holds, never runs into the names.
type formulaKey struct{ formula, names string }

// formulaCache holds compiled formulas, least recently used out first:
// a workload's formula is used on each of its ticks and stays, while a
// tenant cycling through many distinct formulas evicts only the coldest
// and costs recompilation, never a cache emptied for everyone. A
// program holds 55 to 160 KB, so the bound keeps it under about 40 MB.
var formulaCache = lru.New(maxCachedFormulas)

// maxCachedFormulas bounds formulaCache.
const maxCachedFormulas = 256

// compileFormula checks formula over the trigger names and returns its
// program, from the cache when it was compiled before.
func compileFormula(formula string, names []string) (cel.Program, error) {
	key := formulaKey{formula, strings.Join(names, ",")}
	if c, ok := formulaCache.Get(key); ok {
		cf := c.(*compiledFormula)
		return cf.prg, cf.err
	}
	prg, err := buildFormula(formula, names)
	formulaCache.Add(key, &compiledFormula{prg, err})
	return prg, err
}

func buildFormula(formula string, names []string) (cel.Program, error) {
	if len(formula) > MaxFormulaLength {
		return nil, fmt.Errorf("is %d bytes long, more than %d", len(formula), MaxFormulaLength)
	}
	if d := literalNesting(formula); d > MaxFormulaNesting {
		return nil, fmt.Errorf("nests lists or maps %d deep, more than %d: make it flatter", d, MaxFormulaNesting)
	}
	opts := []cel.EnvOption{ext.Math()}
	for _, n := range names {
		opts = append(opts, cel.Variable(n, cel.DoubleType))
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(formula)
	if iss.Err() != nil {
		msg := iss.Err().Error()
		if strings.Contains(msg, "(double, int)") || strings.Contains(msg, "(int, double)") {
			msg += " (numbers in a formula are doubles: write 2.0, not 2)"
		}
		return nil, errors.New(msg)
	}
	if ast.OutputType() != cel.DoubleType {
		return nil, fmt.Errorf("gives a %s; it must give a number (double)", ast.OutputType())
	}
	est, err := env.EstimateCost(ast, formulaEstimator{})
	if err != nil {
		return nil, err
	}
	if est.Max > MaxFormulaCost {
		return nil, fmt.Errorf("may cost up to %d, more than %d: make it simpler", est.Max, MaxFormulaCost)
	}
	return env.Program(ast, cel.CostLimit(MaxFormulaCost))
}

// literalNesting is the deepest nesting of [ and { in formula, counted
// on its bytes (brackets inside string literals count too: a formula is
// arithmetic over numbers).
func literalNesting(formula string) int {
	depth, deepest := 0, 0
	for i := 0; i < len(formula); i++ {
		switch formula[i] {
		case '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ']', '}':
			depth--
		}
	}
	return deepest
}

// formulaEstimator knows nothing beyond CEL's defaults: a formula's
// variables are doubles, whose size does not matter.
type formulaEstimator struct{}

func (formulaEstimator) EstimateSize(checker.AstNode) *checker.SizeEstimate { return nil }
func (formulaEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// triggerNames are the config's trigger names, sorted.
func triggerNames(ts []Trigger) []string {
	names := make([]string, 0, len(ts))
	for _, t := range ts {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	return names
}

// EvalFormula computes m's formula over the triggers' values. Every
// trigger must have a usable value: one without makes the formula fail
// (the composite counts as one failed trigger, V12), with its problem.
func EvalFormula(m *ScalingModifiers, triggers []Trigger, results []TriggerResult) (float64, map[string]float64, error) {
	prg, err := compileFormula(m.Formula, triggerNames(triggers))
	if err != nil {
		return 0, nil, fmt.Errorf("formula %s", err)
	}
	vars := make(map[string]float64, len(triggers))
	act := make(map[string]any, len(triggers))
	for _, t := range triggers {
		r := findResult(results, t.Name)
		switch {
		case r == nil:
			return 0, vars, fmt.Errorf("trigger %s has no result", t.Name)
		case r.Err != nil:
			return 0, vars, fmt.Errorf("trigger %s: %v", t.Name, r.Err)
		case !r.OK:
			return 0, vars, fmt.Errorf("trigger %s: %w", t.Name, errInputNoData)
		case sampleProblem(r.Sample) != "":
			return 0, vars, fmt.Errorf("trigger %s: %s", t.Name, sampleProblem(r.Sample))
		}
		vars[t.Name], act[t.Name] = r.Value, r.Value
	}
	out, _, err := prg.Eval(act)
	if err != nil {
		return 0, vars, fmt.Errorf("formula: %v", err)
	}
	v, ok := out.Value().(float64)
	switch {
	case !ok:
		return 0, vars, fmt.Errorf("formula gave %v, not a number", out.Value())
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, vars, fmt.Errorf("formula gave %v", v)
	case v < 0:
		return 0, vars, fmt.Errorf("formula gave %v, below 0", v)
	}
	return v, vars, nil
}

// compositeTriggers are what Decide runs on with scaling modifiers: one
// trigger, FormulaTrigger, whose value is the formula's, with the
// modifiers' target, type and activation, and its result.
func compositeTriggers(c *Config, results []TriggerResult) ([]Trigger, []TriggerResult, *FormulaState) {
	m := c.ScalingModifiers
	typ := m.MetricType
	if typ == "" {
		typ = TargetAverageValue
	}
	t := Trigger{Name: FormulaTrigger, Type: typ, Threshold: m.Target, ActivationThreshold: m.ActivationTarget}
	v, vars, err := EvalFormula(m, c.Triggers, results)
	st := &FormulaState{Formula: m.Formula, Inputs: vars}
	r := TriggerResult{Name: FormulaTrigger}
	switch {
	case errors.Is(err, errInputNoData):
		// No data is no data, not a failure of the source: the composite
		// has none either (a sleeping workload's normal state).
		st.Problem = err.Error()
	case err != nil:
		st.Problem = err.Error()
		r.Err = err
		// Not asked this tick (a throttled input): the composite was not
		// evaluated either, so its failures neither grow nor reset.
		for i := range results {
			if results[i].NotEvaluated {
				r.NotEvaluated = true
			}
		}
	default:
		st.Value = v
		r.Sample = Sample{Value: v, OK: true}
	}
	return []Trigger{t}, []TriggerResult{r}, st
}

// FormulaState explains a decision made with scaling modifiers: the
// formula, the triggers' values it was given and what it gave.
type FormulaState struct {
	Formula string             `json:"formula"`
	Inputs  map[string]float64 `json:"inputs,omitempty"`
	Value   float64            `json:"value"`
	Problem string             `json:"problem,omitempty"`
}

// ValidateScalingModifiers is V13 for c's scaling modifiers alone, at
// their paths in a config, for tools that write a config (convert).
func ValidateScalingModifiers(c *Config) field.ErrorList {
	return validateScalingModifiers(c.ScalingModifiers, c.Triggers,
		func() *field.Path { return field.NewPath("scalingModifiers") }, func() *field.Path { return field.NewPath("triggers") })
}

// validateScalingModifiers is V13.
func validateScalingModifiers(m *ScalingModifiers, triggers []Trigger, p, tp lazyPath) field.ErrorList {
	if m == nil {
		return nil
	}
	var errs field.ErrorList
	if len(triggers) == 0 {
		return field.ErrorList{field.Invalid(p(), "scalingModifiers", "combines the triggers' values, and this scale config has none: add triggers or remove scalingModifiers")}
	}
	names := triggerNames(triggers)
	for i, t := range triggers {
		switch {
		case t.Name == FormulaTrigger:
			errs = append(errs, field.Invalid(tp().Index(i).Child("name"), t.Name, "is the name of the formula's result; rename the trigger"))
		case !formulaNameRE.MatchString(t.Name):
			errs = append(errs, field.Invalid(tp().Index(i).Child("name"), t.Name,
				"must be an identifier (letters, digits and _, not starting with a digit) to be used in scalingModifiers.formula"))
		case celReserved[t.Name]:
			errs = append(errs, field.Invalid(tp().Index(i).Child("name"), t.Name,
				"is reserved in CEL and could not be used in scalingModifiers.formula; rename the trigger"))
		}
	}
	if len(errs) > 0 {
		// The formula cannot be checked against names it cannot use.
		return errs
	}
	if strings.TrimSpace(m.Formula) == "" {
		errs = append(errs, field.Required(p().Child("formula"), "a CEL expression over the triggers' names, e.g. "+strings.Join(names, " + ")))
	} else if _, err := buildFormula(m.Formula, names); err != nil {
		errs = append(errs, field.Invalid(p().Child("formula"), clip(m.Formula), err.Error()+"; the triggers are "+strings.Join(names, ", ")))
	}
	if !(m.Target > 0) || math.IsInf(m.Target, 0) {
		errs = append(errs, field.Invalid(p().Child("target"), m.Target, "must be a number > 0"))
	}
	if a := m.ActivationTarget; a != nil && (!(*a >= 0) || math.IsInf(*a, 0)) {
		errs = append(errs, field.Invalid(p().Child("activationTarget"), *a, "must be a number >= 0"))
	}
	switch m.MetricType {
	case "", TargetAverageValue, TargetValue:
	default:
		errs = append(errs, field.NotSupported(p().Child("metricType"), m.MetricType, []string{string(TargetAverageValue), string(TargetValue)}))
	}
	return errs
}

// clip is a formula as a refusal quotes it: the first 256 bytes, so that
// an oversized formula does not come back whole in the 422.
func clip(formula string) string {
	const max = 256
	if len(formula) <= max {
		return formula
	}
	return formula[:max] + fmt.Sprintf("... (%d bytes in all)", len(formula))
}
