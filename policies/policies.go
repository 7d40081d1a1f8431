package policies

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// Set is one profile's policies and their bindings.
type Set struct {
	Validating        *admissionregistrationv1.ValidatingAdmissionPolicy
	ValidatingBinding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	Mutating          *admissionregistrationv1.MutatingAdmissionPolicy
	MutatingBinding   *admissionregistrationv1.MutatingAdmissionPolicyBinding
	// Rules are the contract's rule ids the policies enforce, in order.
	Rules []string
}

// Objects are the set's objects in the order to apply them: each policy
// before its binding.
func (s Set) Objects() []client.Object {
	return []client.Object{s.Mutating, s.MutatingBinding, s.Validating, s.ValidatingBinding}
}

// Name is the name of the profile's policies and bindings:
// scaleplane-<resource>.<group>, unique per kind as the webhook entries
// are.
func Name(p *profile.Compiled) string {
	gvr := p.GVR()
	if gvr.Group == "" {
		return "scaleplane-" + gvr.Resource
	}
	return "scaleplane-" + gvr.Resource + "." + gvr.Group
}

// layout is what the expressions are built from: the profile's paths as
// segments.
type layout struct {
	replicas, config, groups []string
	name, members            string
	maxReplicas              int32
	targetSelf               bool
	namesInSelector          bool
	// schema is the CRD's limits on what the mutations write (M7); the
	// zero value when the profile was compiled without its CRD.
	schema scaling.Schema
}

func newLayout(p *profile.Compiled) layout {
	spec, l := p.Spec(), p.Layout()
	out := layout{
		replicas:        segments(spec.ReplicasPath),
		config:          segments(spec.ScaleConfig.Path),
		maxReplicas:     l.MaxReplicas,
		targetSelf:      l.TargetSelf,
		namesInSelector: l.GroupNamesInSelector,
		schema:          l.Schema,
	}
	if g := spec.MemberGroups; g != nil {
		out.groups = segments(g.Path)
		out.name, out.members = g.NameField, g.MembersField
	}
	return out
}

// For compiles p's policies. A config held in an annotation gets V1, V8
// and M5 only: its text is JSON, which the webhook reads (V9) and
// rewrites (M2).
func For(p *profile.Compiled) Set {
	l := newLayout(p)
	name := Name(p)
	gvr := p.GVR()
	fail := admissionregistrationv1.Fail
	match := &admissionregistrationv1.MatchResources{
		ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
			RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups:   []string{gvr.Group},
					APIVersions: []string{gvr.Version},
					Resources:   []string{gvr.Resource},
				},
			},
		}},
	}
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue}}
	}
	typeMeta := func(kind string) metav1.TypeMeta {
		return metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: kind}
	}
	causes, ok, vrules := l.causes()
	variables := append(l.variables(), admissionregistrationv1.Variable{Name: "causes", Expression: causes})
	mutations, mrules, needed := l.mutations()
	return Set{
		Mutating: &admissionregistrationv1.MutatingAdmissionPolicy{
			TypeMeta:   typeMeta("MutatingAdmissionPolicy"),
			ObjectMeta: meta(),
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				MatchConstraints: match.DeepCopy(),
				MatchConditions:  []admissionregistrationv1.MatchCondition{needed},
				Mutations:        mutations,
				FailurePolicy:    &fail,
				// Every patch is written only where the value differs, so
				// running again after a later mutation changes nothing (M6).
				ReinvocationPolicy: admissionregistrationv1.IfNeededReinvocationPolicy,
			},
		},
		MutatingBinding: &admissionregistrationv1.MutatingAdmissionPolicyBinding{
			TypeMeta:   typeMeta("MutatingAdmissionPolicyBinding"),
			ObjectMeta: meta(),
			Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name},
		},
		Validating: &admissionregistrationv1.ValidatingAdmissionPolicy{
			TypeMeta:   typeMeta("ValidatingAdmissionPolicy"),
			ObjectMeta: meta(),
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: match,
				FailurePolicy:    &fail,
				// The API server evaluates a validation's message on
				// every request it validates, refused or not
				// (k8s.io/apiserver's validating Validator), and match
				// conditions cannot read variables: the checks are a
				// match condition, written out, so that a valid object
				// skips the policy after one evaluation of them, and an
				// invalid one meets a validation that refuses with every
				// cause.
				// The ratchet comes first in the same condition, so an
				// UPDATE that leaves the scaling fields as stored skips
				// the checks too.
				MatchConditions: []admissionregistrationv1.MatchCondition{
					{Name: "scaling-fields-invalid", Expression: "(" + l.ratchet() + ") && !(" + inline(ok, variables) + ")"}},
				Variables: variables,
				Validations: []admissionregistrationv1.Validation{{
					Expression:        "false",
					MessageExpression: "variables.causes.join('; ')",
					// The API server's fallback, should the message fail.
					Message: "the scaling fields break the scale contract (docs/contract.md)",
					Reason:  ptr(metav1.StatusReasonInvalid),
				}},
			},
		},
		ValidatingBinding: &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			TypeMeta:   typeMeta("ValidatingAdmissionPolicyBinding"),
			ObjectMeta: meta(),
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        name,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			},
		},
		Rules: append(mrules, vrules...),
	}
}

// inline is expr with every variables.<name> replaced: a variable that
// reads the object only (a field's optional or value) and that expr reads
// three times or more is bound once, as the variable of a comprehension
// over a one-element list around the whole expression
// ("[object.?spec.?replicas].all(v_replicas, ...)"); any other variable
// is replaced by its expression (itself inlined), in parentheses, so a
// guard before a computed one still keeps it from being evaluated. Match
// conditions cannot read variables, and the API server's evaluator walks
// the object from its root at every field read, with its cost tracking at
// every step; a binding costs about two reads (BenchmarkPolicyConditions).
func inline(expr string, vars []admissionregistrationv1.Variable) string {
	byName := map[string]string{}
	for _, v := range vars {
		byName[v.Name] = v.Expression
	}
	// uses counts each field variable's reads once the computed ones are
	// expanded: binding costs a comprehension, about two reads of a field
	// (BenchmarkPolicyConditions), so it is worth it from three.
	uses := map[string]int{}
	var expand func(e string, bind func(name string) bool) string
	expand = func(e string, bind func(name string) bool) string {
		return variableRef.ReplaceAllStringFunc(e, func(ref string) string {
			name := strings.TrimPrefix(ref, "variables.")
			def, ok := byName[name]
			if !ok {
				return ref
			}
			if !variableRef.MatchString(def) {
				uses[name]++
				if bind(name) {
					return boundName(name)
				}
				return "(" + def + ")"
			}
			return "(" + expand(def, bind) + ")"
		})
	}
	expand(expr, func(string) bool { return false })
	often := map[string]bool{}
	for name, n := range uses {
		often[name] = n > 2
	}
	bound := func(name string) bool { return often[name] }
	out := expand(expr, bound)
	for i := len(vars) - 1; i >= 0; i-- {
		if v := vars[i]; bound(v.Name) {
			out = fmt.Sprintf("[%s].all(%s, %s)", v.Expression, boundName(v.Name), out)
		}
	}
	return out
}

// expand is expr with every variables.<name> replaced by the variable's
// expression (itself expanded), in parentheses.
func expand(expr string, vars []admissionregistrationv1.Variable) string {
	byName := map[string]string{}
	for _, v := range vars {
		byName[v.Name] = v.Expression
	}
	var rec func(string) string
	rec = func(e string) string {
		return variableRef.ReplaceAllStringFunc(e, func(ref string) string {
			def, ok := byName[strings.TrimPrefix(ref, "variables.")]
			if !ok {
				return ref
			}
			return "(" + rec(def) + ")"
		})
	}
	return rec(expr)
}

// boundName is the comprehension variable inline binds a variable to.
func boundName(name string) string { return "v_" + name }

// variableRef is a reference to a variable in an expression.
var variableRef = regexp.MustCompile(`variables\.[A-Za-z_][A-Za-z0-9_]*`)

// ratchet skips validation of an UPDATE that leaves R, C and G as stored,
// as the webhook does: an object stored before a rule applied can still
// have its other fields changed.
func (l layout) ratchet() string {
	// Each field as an optional of object and of oldObject; an annotation
	// is a map key, which no field name can spell.
	type field struct{ cur, old string }
	at := func(segs []string) field { return field{optional("object", segs), optional("oldObject", segs)} }
	fields := []field{at(l.replicas)}
	if l.config != nil {
		fields = append(fields, at(l.config))
	} else {
		key := "[?" + celString(v1alpha1.AnnotationScaleConfig) + "]"
		fields = append(fields, field{"object.?metadata.?annotations" + key, "oldObject.?metadata.?annotations" + key})
	}
	if l.groups != nil {
		fields = append(fields, at(l.groups))
	}
	conds := []string{"request.operation != 'UPDATE'"}
	for _, f := range fields {
		conds = append(conds, fmt.Sprintf("%s.hasValue() != %s.hasValue() || (%s.hasValue() && %s.value() != %s.value())", f.cur, f.old, f.cur, f.cur, f.old))
	}
	return strings.Join(conds, " || ")
}

// wellTyped holds when R is a number and C an object with numbers for
// bounds. The mutations read them as such; an object where they are not is
// left unmutated for the schema to refuse at the field's path, as the
// webhook's mutation writes nothing over a value it could not read.
// It reads R, C and C's bounds as the mutations' variables
// (mutationVariables).
func (l layout) wellTyped() string {
	r := "variables.r"
	conds := []string{fmt.Sprintf("(!%[1]s.hasValue() || type(%[1]s.value()) == int)", r)}
	if l.config != nil {
		c, cmin, cmax := "variables.c", "variables.cmin", "variables.cmax"
		conds = append(conds, fmt.Sprintf("(!%[1]s.hasValue() || (type(%[1]s.value()) == map && (!%[2]s.hasValue() || type(%[2]s.value()) == int) && (!%[3]s.hasValue() || type(%[3]s.value()) == int)))", c, cmin, cmax))
	}
	return strings.Join(conds, " && ")
}

// mutationVariables are the fields of the object as sent that the
// mutating policy reads, as optionals: r (R), c (C), cmin and cmax (C's
// bounds) and g (G). The mutating policy's condition binds them once
// (inline); its mutation reads them written out.
func (l layout) mutationVariables() []admissionregistrationv1.Variable {
	vars := []admissionregistrationv1.Variable{{Name: "r", Expression: optional("object", l.replicas)}}
	if l.config != nil {
		vars = append(vars,
			admissionregistrationv1.Variable{Name: "c", Expression: optional("object", l.config)},
			admissionregistrationv1.Variable{Name: "cmin", Expression: optional("object", append(slices.Clone(l.config), "minReplicas"))},
			admissionregistrationv1.Variable{Name: "cmax", Expression: optional("object", append(slices.Clone(l.config), "maxReplicas"))})
	}
	if l.groups != nil {
		vars = append(vars, admissionregistrationv1.Variable{Name: "g", Expression: optional("object", l.groups)})
	}
	return vars
}

// variables are what the validations read, each computed once.
func (l layout) variables() []admissionregistrationv1.Variable {
	vars := []admissionregistrationv1.Variable{{Name: "replicas", Expression: optional("object", l.replicas)}}
	if l.config != nil {
		vars = append(vars,
			admissionregistrationv1.Variable{Name: "config", Expression: optional("object", l.config)},
			// Optionals are selected from object, never from a variable:
			// the API server types variables as dyn, and a ".?" on a dyn
			// holding an optional admitted every value in the e2e test.
			admissionregistrationv1.Variable{Name: "min", Expression: optional("object", append(slices.Clone(l.config), "minReplicas"))},
			admissionregistrationv1.Variable{Name: "max", Expression: optional("object", append(slices.Clone(l.config), "maxReplicas"))},
			admissionregistrationv1.Variable{Name: "triggers", Expression: optional("object", append(slices.Clone(l.config), "triggers")) + ".orValue([])"},
			admissionregistrationv1.Variable{Name: "idle", Expression: optional("object", append(slices.Clone(l.config), "idle")) + ".hasValue()"},
			// lo and hi are C's bounds with M2 applied, as scaling's
			// validateBounds reads them.
			admissionregistrationv1.Variable{Name: "lo", Expression: "variables.min.orValue(variables.max.orValue(1) == 0 ? 0 : 1)"},
			admissionregistrationv1.Variable{Name: "hi", Expression: hiExpr},
		)
		// Each behavior direction as a map (empty when absent), read
		// with has(): one walk down the object instead of one per check.
		for _, dir := range behaviorDirections {
			vars = append(vars, admissionregistrationv1.Variable{Name: dir, Expression: optional("object", append(slices.Clone(l.config), "behavior", dir)) + ".orValue({})"})
		}
	}
	if l.groups != nil {
		vars = append(vars, admissionregistrationv1.Variable{Name: "groups", Expression: optional("object", l.groups) + ".orValue([])"})
		for _, f := range l.groupFilters() {
			vars = append(vars, admissionregistrationv1.Variable{Name: f.name, Expression: fmt.Sprintf("variables.groups.transformList(i, g, %s, i)", f.filter)})
		}
	}
	return vars
}

// hiExpr is C's maximum with M2 applied, from its minimum with M2
// applied (variables.lo).
const hiExpr = "variables.max.orValue(variables.replicas.hasValue() && variables.replicas.value() > variables.lo ? variables.replicas.value() : variables.lo)"

// behaviorDirections are the directions of a behavior, as V4 checks them.
var behaviorDirections = []string{"scaleUp", "scaleDown"}

// groupFilter is one V8 check: filter holds for the group g at index i of
// variables.groups that breaks it; name is the variable listing their
// indices, for the refusal's sentences.
type groupFilter struct{ name, filter string }

func (l layout) groupFilters() []groupFilter {
	n, m := celField(l.name), celField(l.members)
	out := []groupFilter{
		{"unnamed", fmt.Sprintf("type(g) == map && (!has(g.%s) || g.%s == '')", n, n)},
		{"duplicates", fmt.Sprintf("type(g) == map && has(g.%s) && g.%s != '' && variables.groups.exists(j, h, j < i && type(h) == map && has(h.%s) && h.%s == g.%s)", n, n, n, n, n)},
		{"negativeMembers", fmt.Sprintf("type(g) == map && has(g.%s) && type(g.%s) == int && g.%s < 0", m, m, m)},
	}
	if l.namesInSelector {
		out = append(out,
			groupFilter{"unlabelledNames", fmt.Sprintf("type(g) == map && has(g.%s) && type(g.%s) == string && g.%s != '' && !g.%s.matches(%s)", n, n, n, n, celString("^"+labelValueRegexp+"$"))},
			groupFilter{"longNames", fmt.Sprintf("type(g) == map && has(g.%s) && type(g.%s) == string && size(g.%s) > %d", n, n, n, validation.LabelValueMaxLength)},
		)
	}
	return out
}

// causes are V1, V2 and V4 (at a spec path) and V8, as one CEL list of the
// refusal's sentences, each starting with its exact field path as the
// webhook's causes read. The API server stops at a policy's first failing
// validation and a Validation has no field path of its own, so the
// policy has one validation over this list: one refusal names every
// cause, as the webhook's one 422 does.
func (l layout) causes() (string, string, []string) {
	// parts are the causes' lists; oks the same checks as booleans, for
	// the validation itself: the causes (strings built, lists
	// concatenated) are computed only for the message of a refusal.
	var parts, oks []string
	add := func(expr, msg string) {
		parts = append(parts, fmt.Sprintf("(%s ? [] : [%s])", expr, msg))
		oks = append(oks, "("+expr+")")
	}
	// each is a V8 check's sentences; the checks are one pass over the
	// groups in oks (below).
	each := func(list, msg string) {
		parts = append(parts, fmt.Sprintf("variables.%s.map(i, %s)", list, msg))
	}
	r := dotted(l.replicas)
	rules := []string{"V1"}
	add("!variables.replicas.hasValue() || variables.replicas.value() >= 0",
		quote(r+": Invalid value: ")+" + string(variables.replicas.orValue(0)) + ': must be greater than or equal to 0'")
	if l.maxReplicas > 0 {
		add(fmt.Sprintf("!variables.replicas.hasValue() || variables.replicas.value() <= %d", l.maxReplicas),
			quote(r+": Invalid value: ")+fmt.Sprintf(" + string(variables.replicas.orValue(0)) + ': must be less than or equal to %d, the upper bound this kind\\'s profile allows; lower it or raise the profile\\'s maxReplicas'", l.maxReplicas))
	}
	if l.config != nil {
		rules = append(rules, "V2")
		minP, maxP := append(slices.Clone(l.config), "minReplicas"), append(slices.Clone(l.config), "maxReplicas")
		for _, b := range [][]string{minP, maxP} {
			f := b[len(b)-1]
			v := "variables." + strings.TrimSuffix(f, "Replicas")
			add(v+".orValue(0) >= 0", quote(dotted(b)+": Invalid value: ")+" + string("+v+".orValue(0)) + ': must be greater than or equal to 0'")
		}
		if l.maxReplicas > 0 {
			add(fmt.Sprintf("variables.max.orValue(0) <= %d", l.maxReplicas),
				quote(dotted(maxP)+": Invalid value: ")+fmt.Sprintf(" + string(variables.max.orValue(0)) + ': must be less than or equal to %d, the upper bound this kind\\'s profile allows; lower maxReplicas'", l.maxReplicas))
		}
		// The two checks of the bounds with M2 applied; for the
		// validation, one check that computes lo and hi once (bound as
		// inline binds a variable), only when C is present.
		order, zero := "variables.lo < 0 || variables.hi < 0 || variables.lo <= variables.hi", "!(variables.lo == 0 && variables.hi > 0) || size(variables.triggers) > 0 || variables.idle"
		parts = append(parts,
			fmt.Sprintf("(!variables.config.hasValue() || %s ? [] : [%s])", order,
				quote(dotted(minP)+": Invalid value: ")+" + string(variables.lo) + ': must be less than or equal to maxReplicas (' + string(variables.hi) + '); raise maxReplicas or lower minReplicas'"),
			fmt.Sprintf("(!variables.config.hasValue() || %s ? [] : [%s])", zero,
				quote(dotted(minP)+": Invalid value: 0: may be 0 below maxReplicas (")+" + string(variables.hi) + ') only with triggers or idle settings, because an HPA cannot scale to zero; set minReplicas to 1 or more, add triggers or idle, or set maxReplicas to 0 to stay at zero'"))
		bind := strings.NewReplacer("variables.lo", "v_lo", "variables.hi", "v_hi")
		oks = append(oks, fmt.Sprintf("(!variables.config.hasValue() || [variables.lo].all(v_lo, [%s].all(v_hi, (%s) && (%s))))",
			bind.Replace(hiExpr), bind.Replace(order), bind.Replace(zero)))
	}
	if l.config != nil {
		rules = append(rules, "V4")
		for _, dir := range behaviorDirections {
			l.behaviorCauses(append(slices.Clone(l.config), "behavior", dir), "variables."+dir, func(causes, ok string) {
				parts = append(parts, causes)
				oks = append(oks, ok)
			})
		}
	}
	if l.groups != nil {
		rules = append(rules, "V8")
		g := dotted(l.groups)
		at := func(field string) string {
			return quote(g+"[") + " + string(i) + " + quote("]."+field)
		}
		each("unnamed", at(l.name)+" + ': Required value: every group needs a name; name it, e.g. rack-a'")
		each("duplicates", fmt.Sprintf("%s + ': Duplicate value: \"' + variables.groups[i].%s + '\"'", at(l.name), celField(l.name)))
		if l.namesInSelector {
			// The sentences are the webhook's own: validation.IsValidLabelValue's
			// of a value failing each check, and validateGroups' advice.
			advice := "; group names are label values of the pods' selector (the profile's pods.memberGroupLabel), so rename the group"
			for _, c := range []struct{ variable, bad string }{{"unlabelledNames", "-"}, {"longNames", strings.Repeat("a", validation.LabelValueMaxLength+1)}} {
				msg := validation.IsValidLabelValue(c.bad)[0] + advice
				each(c.variable, fmt.Sprintf("%s + ': Invalid value: \"' + variables.groups[i].%s + '\": ' + %s", at(l.name), celField(l.name), celString(msg)))
			}
		}
		each("negativeMembers", fmt.Sprintf("%s + ': Invalid value: ' + string(variables.groups[i].%s) + ': must be greater than or equal to 0'", at(l.members), celField(l.members)))
		// The same checks as one pass, each field read once.
		n, m := celField(l.name), celField(l.members)
		label := ""
		if l.namesInSelector {
			label = fmt.Sprintf(" && (type(g.%[1]s) != string || (size(g.%[1]s) <= %[2]d && g.%[1]s.matches(%[3]s)))", n, validation.LabelValueMaxLength, celString("^"+labelValueRegexp+"$"))
		}
		// Every group that is an object is named, so the groups' names
		// are unique when the list of them has as many distinct ones: one
		// call instead of a pass over the groups before each group.
		oks = append(oks, fmt.Sprintf("variables.groups.all(g, type(g) != map || (has(g.%[1]s) && g.%[1]s != ''%[3]s && (!has(g.%[2]s) || type(g.%[2]s) != int || g.%[2]s >= 0))) && "+
			"[variables.groups.transformList(i, g, type(g) == map, g.%[1]s)].all(v_names, size(v_names) == size(v_names.distinct()))", n, m, label))
	}
	return strings.Join(parts, " + "), strings.Join(oks, " && "), rules
}

// The HPA's limits V4 checks, as scaling's validateScalingRules states
// them.
const (
	maxStabilizationWindowSeconds = 3600
	maxPolicyPeriodSeconds        = 1800
)

// behaviorCauses are V4 for one direction of C's behavior at segs, in the
// webhook's sentences. A tolerance is a quantity, which CEL reads as text
// or a number; its check stays with the webhook.
func (l layout) behaviorCauses(segs []string, d string, add func(causes, ok string)) {
	p := dotted(segs)
	w, sp, pl := d+".stabilizationWindowSeconds", d+".selectPolicy", d+".policies"
	// One sentence per policy that breaks a limit; an absent field is the
	// Go decoder's zero, as the webhook reads it.
	item := func(f string) string { return quote(p+".policies[") + " + string(i) + " + quote("]."+f) }
	typ, val, period := "(has(q.type) ? string(q.type) : '')", "(has(q.value) ? q.value : 0)", "(has(q.periodSeconds) ? q.periodSeconds : 0)"
	causes := []string{
		fmt.Sprintf("(!has(%[1]s) || (%[1]s >= 0 && %[1]s <= %[2]d) ? [] : [%[3]s + string(%[1]s) + ': must be between 0 and %[2]d seconds'])",
			w, maxStabilizationWindowSeconds, quote(p+".stabilizationWindowSeconds: Invalid value: ")),
		fmt.Sprintf("(!has(%[1]s) || %[1]s in ['Disabled', 'Max', 'Min'] ? [] : [%[2]s + string(%[1]s) + '\": supported values: \"Disabled\", \"Max\", \"Min\"'])",
			sp, quote(p+".selectPolicy: Unsupported value: \"")),
		fmt.Sprintf("(!has(%[1]s) || size(%[1]s) > 0 ? [] : [%[2]s])",
			pl, quote(p+".policies: Required value: must list at least one policy; remove policies to get the default ones")),
	}
	policies := fmt.Sprintf("(has(%[1]s) ? %[1]s : [])", pl)
	for _, c := range []struct{ filter, msg string }{
		{"!(" + typ + " in ['Pods', 'Percent'])", item("type") + " + ': Unsupported value: \"' + " + typ + " + '\": supported values: \"Percent\", \"Pods\"'"},
		{val + " <= 0", item("value") + " + ': Invalid value: ' + string(" + val + ") + ': must be greater than 0'"},
		{fmt.Sprintf("%[1]s < 1 || %[1]s > %[2]d", period, maxPolicyPeriodSeconds), item("periodSeconds") + " + ': Invalid value: ' + string(" + period + fmt.Sprintf(") + ': must be between 1 and %d seconds'", maxPolicyPeriodSeconds)},
	} {
		causes = append(causes, fmt.Sprintf("%s.transformList(i, q, %s, %s)", policies, c.filter, c.msg))
	}
	// The same checks as one boolean, each field read once; a direction
	// that is not a map is the schema's to refuse.
	ok := fmt.Sprintf("(type(%[1]s) != map || ((!has(%[2]s) || (%[2]s >= 0 && %[2]s <= %[3]d)) && (!has(%[4]s) || %[4]s in ['Disabled', 'Max', 'Min']) && "+
		"(!has(%[5]s) || (size(%[5]s) > 0 && %[5]s.all(q, has(q.type) && string(q.type) in ['Pods', 'Percent'] && has(q.value) && q.value > 0 && has(q.periodSeconds) && q.periodSeconds >= 1 && q.periodSeconds <= %[6]d)))))",
		d, w, maxStabilizationWindowSeconds, sp, pl, maxPolicyPeriodSeconds)
	// The sentences read the direction as a map.
	add(fmt.Sprintf("(type(%s) != map ? [] : %s)", d, strings.Join(causes, " + ")), ok)
}

// mutations are M1–M5 as one JSON-patch mutation: the API server encodes
// and decodes the whole object once per mutation, patch or not, so one
// mutation costs a third of three. Each rule's condition and values are
// written against the object as sent, with what the rules before it
// write computed inline (M2's bounds for M3 and M4, M4's R for M5), and
// the rules' patches are concatenated in the contract's order, so each
// patch applies to the object the earlier ones left. Every patch is
// written only where the value differs, so an object that needs nothing
// gets no patch (M6).
func (l layout) mutations() ([]admissionregistrationv1.Mutation, []string, admissionregistrationv1.MatchCondition) {
	var rules, parts, needs []string
	// add appends "cond ? patches : []"; need (cond when empty) holds
	// when the rule writes a patch.
	add := func(rule, cond, patches, need string) {
		if len(rules) == 0 || rules[len(rules)-1] != rule {
			rules = append(rules, rule)
		}
		if need == "" {
			need = cond
		}
		needs = append(needs, "("+need+")")
		parts = append(parts, "("+cond+" ? "+patches+" : [])")
	}
	// The fields as sent, as mutationVariables names them.
	r := "variables.r"
	// hasR and valR are R after M4 (R as sent unless M4 writes it).
	hasR, valR := r+".hasValue()", r+".value()"
	if l.config != nil {
		c, cmin, cmax := "variables.c", "variables.cmin", "variables.cmax"
		cp := pointer(l.config)
		// M7: a value the CRD's schema refuses is not written; M1's and
		// M3's pins as a whole, M2's bounds one by one.
		pinFits := fits(l.schema.MinReplicas, r+".value()") + fits(l.schema.MaxReplicas, r+".value()")
		// M1 writes only where C is absent, M2 only where it is present;
		// M2's maximum reads the minimum with the default M2's minimum
		// writes (1 when no maximum).
		m1 := fmt.Sprintf("%s.hasValue() && !%s.hasValue()%s", r, c, pinFits)
		add("M1", m1,
			fmt.Sprintf("%s[JSONPatch{op: 'add', path: %s, value: {'minReplicas': %s.value(), 'maxReplicas': %s.value()}}]", l.parents(l.config, l.replicas), quote(cp), r, r), "")
		minFill := fmt.Sprintf("(%s.orValue(1) == 0 ? 0 : 1)", cmax)
		m2min := fmt.Sprintf("%s.hasValue() && !%s.hasValue()%s", c, cmin, fits(l.schema.MinReplicas, minFill))
		add("M2", m2min, fmt.Sprintf("[JSONPatch{op: 'add', path: %s, value: %s}]", quote(cp+"/minReplicas"), minFill), "")
		maxFill := fmt.Sprintf("(%s.hasValue() && %s.value() > %s.orValue(1) ? %s.value() : %s.orValue(1))", r, r, cmin, r, cmin)
		m2max := fmt.Sprintf("%s.hasValue() && !%s.hasValue()%s", c, cmax, fits(l.schema.MaxReplicas, maxFill))
		add("M2", m2max, fmt.Sprintf("[JSONPatch{op: 'add', path: %s, value: %s}]", quote(cp+"/maxReplicas"), maxFill), "")
		// A bound of C as M1 and M2 leave it, or absent (def).
		after := func(bound, fill, cond string) func(def string) string {
			return func(def string) string {
				return fmt.Sprintf("((%s) ? %s.value() : (%s.hasValue() ? %s.value() : ((%s) ? %s : %s)))", m1, r, bound, bound, cond, fill, def)
			}
		}
		minAfter, maxAfter := after(cmin, minFill, m2min), after(cmax, maxFill, m2max)
		// M3, as scaling's pinsFollow: the old config, with M2's bounds,
		// pinned to the old R, and the request's config (after M2) the
		// same in its bounds and every other field. M1 never runs beside
		// it: M1's pin is at R, which M3 requires to differ from the old
		// R.
		oldR, oldC := optional("oldObject", l.replicas), optional("oldObject", l.config)
		oldMin, oldMax := optional("oldObject", append(slices.Clone(l.config), "minReplicas")), optional("oldObject", append(slices.Clone(l.config), "maxReplicas"))
		oldLo := fmt.Sprintf("%s.orValue(%s.orValue(1) == 0 ? 0 : 1)", oldMin, oldMax)
		oldHi := fmt.Sprintf("%s.orValue(%s.value() > %s ? %s.value() : %s)", oldMax, oldR, oldLo, oldR, oldLo)
		bounds := "['minReplicas', 'maxReplicas']"
		add("M3", fmt.Sprintf("request.operation == 'UPDATE' && %[1]s.hasValue() && %[2]s.hasValue() && %[1]s.value() != %[2]s.value() && %[3]s.hasValue() && %[4]s.hasValue() && "+
			"%[5]s == %[1]s.value() && %[6]s == %[1]s.value() && %[7]s == %[5]s && %[8]s == %[6]s && "+
			"%[3]s.value().all(k, k in %[9]s || (k in %[4]s.value() && %[3]s.value()[k] == %[4]s.value()[k])) && %[4]s.value().all(k, k in %[9]s || k in %[3]s.value())%[10]s",
			oldR, r, c, oldC, oldLo, oldHi, minAfter("-1"), maxAfter("-1"), bounds, pinFits),
			fmt.Sprintf("[JSONPatch{op: 'replace', path: %[1]s, value: %[2]s.value()}, JSONPatch{op: 'replace', path: %[3]s, value: %[2]s.value()}]", quote(cp+"/minReplicas"), r, quote(cp+"/maxReplicas")), "")
		if l.targetSelf {
			// M3 needs R, so M4 reads C as M1 and M2 leave it.
			m4 := fmt.Sprintf("!%s.hasValue() && %s < %s%s", r, minAfter("1"), maxAfter("0"), fits(l.schema.Replicas, minAfter("1")))
			add("M4", m4, fmt.Sprintf("%s[JSONPatch{op: 'add', path: %s, value: %s}]", l.parents(l.replicas, l.config), quote(pointer(l.replicas)), minAfter("1")), "")
			hasR = fmt.Sprintf("(%s.hasValue() || (%s))", r, m4)
			valR = fmt.Sprintf("(%s.hasValue() ? %s.value() : %s)", r, r, minAfter("1"))
		}
	}
	if l.groups != nil {
		// A group that is not an object, or a count that is not a number,
		// is left for the schema (or the webhook) to refuse at its path:
		// the webhook's M5 writes nothing over a value it could not read.
		m := celField(l.members)
		filter := fmt.Sprintf("type(g) == map && (!has(g.%s) || (type(g.%s) == int && g.%s != %s))", m, m, m, valR)
		cond := hasR + fits(l.schema.Members, valR)
		add("M5", cond,
			fmt.Sprintf("variables.g.orValue([]).transformList(i, g, %s, JSONPatch{op: 'add', path: %s + string(i) + %s, value: %s})", filter, quote(pointer(l.groups)+"/"), quote("/"+l.members), valR),
			fmt.Sprintf("%s && variables.g.orValue([]).exists(g, %s)", cond, filter))
	}
	// The policy runs only when some rule writes a patch: every condition
	// reads the object as sent, so "any rule writes" is exact. The API
	// server encodes and decodes the whole object once per mutation,
	// patch or not; an object that needs nothing is spared that.
	// It holds only for an object well typed (wellTyped), in the same
	// condition: one evaluation, which binds the fields both read.
	need := admissionregistrationv1.MatchCondition{Name: "scaling-fields-need-defaulting", Expression: "false"}
	vars := l.mutationVariables()
	expr := expand(strings.Join(parts, " + "), vars)
	if len(needs) > 0 {
		need.Expression = inline(l.wellTyped()+" && ("+strings.Join(needs, " || ")+")", vars)
	} else {
		// A config in an annotation and no member groups: nothing CEL
		// defaults. The API server refuses a policy without a mutation, so
		// it gets one that patches nothing (typed as a list of patches, as
		// the API server requires), behind a condition that never holds.
		expr = "[JSONPatch{op: 'test', path: '/kind', value: object.kind}].filter(p, false)"
	}
	return []admissionregistrationv1.Mutation{{
		PatchType: admissionregistrationv1.PatchTypeJSONPatch,
		JSONPatch: &admissionregistrationv1.JSONPatch{Expression: expr},
	}}, rules, need
}

// parents is the CEL list of patches that create the missing objects
// above segs, followed by "+ " so a last patch can be appended; the
// parents of known, which the condition requires to be present, are never
// missing.
func (l layout) parents(segs, known []string) string {
	var b strings.Builder
	for k := 1; k < len(segs); k++ {
		prefix := segs[:k]
		if len(known) > k && slices.Equal(known[:k], prefix) {
			continue
		}
		fmt.Fprintf(&b, "(%s.hasValue() ? [] : [JSONPatch{op: 'add', path: %s, value: {}}]) + ", optional("object", prefix), quote(pointer(prefix)))
	}
	return b.String()
}

// fits is " && <x is a value lim accepts>", or "" when lim accepts every
// integer: M7's check of a value a mutation would write, as
// scaling.Limits.Refuses makes it, with the bounds as the integers
// Limits.Accepted gives.
func fits(lim scaling.Limits, x string) string {
	lo, hi := lim.Accepted()
	var b strings.Builder
	if lo != math.MinInt32 {
		fmt.Fprintf(&b, " && %s >= %d", x, lo)
	}
	if hi != math.MaxInt32 {
		fmt.Fprintf(&b, " && %s <= %d", x, hi)
	}
	return b.String()
}

// labelValueRegexp is a label value, as apimachinery's validation checks
// it.
const labelValueRegexp = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"

func ptr[T any](v T) *T { return &v }

// ForOwner is For with the objects named and labelled for owner, as the
// webhook entries an owner syncs are (webhooks.SyncPolicies): named
// <owner>-<resource>.<group> and labelled scaleplane.io/owner=<owner>, so
// several binaries and embedding operators keep their policies apart. The
// binary's owner, scaleplane, gets For's names.
func ForOwner(p *profile.Compiled, owner string) Set {
	s := For(p)
	name := owner + strings.TrimPrefix(Name(p), "scaleplane")
	for _, obj := range s.Objects() {
		obj.SetName(name)
		labels := obj.GetLabels()
		labels[v1alpha1.LabelOwner] = owner
		obj.SetLabels(labels)
	}
	s.MutatingBinding.Spec.PolicyName = name
	s.ValidatingBinding.Spec.PolicyName = name
	return s
}
