package policies

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
)

// WebhookConditionName names the match condition WebhookCondition builds.
const WebhookConditionName = "needs-scaleplane"

// decided are C's fields the policies decide (M1–M4, V2, V4 but a
// tolerance); every other field of C is the webhook's.
var decided = []string{"minReplicas", "maxReplicas", "behavior"}

// WebhookCondition is the match condition of p's mutating and validating
// webhook entries when the policies admit p's kind: the API server calls
// the webhook only for a write the policies cannot decide, so every other
// write never leaves it. That is a CREATE, or an UPDATE that changes it,
// of
//   - a field of C other than its bounds and behavior (metrics, triggers,
//     idle, schedule, dependsOn, pollingIntervalSeconds, a field C does not
//     have): V3, V5–V7, V10, V11, V9's unknown fields;
//   - a behavior direction's tolerance (V4's quantity);
//   - the bounds, when C has a fallback or idle settings, whose counts
//     the webhook checks against them (V12, V6);
//   - C itself when it is not an object (the webhook's sentence);
//   - C in an annotation, whose JSON the policies do not read (V2, V9, M2,
//     M3 there).
//
// An UPDATE that leaves those as stored skips the webhook, as the
// webhook's ratcheting would have admitted them unchanged.
func WebhookCondition(p *profile.Compiled) admissionregistrationv1.MatchCondition {
	l := newLayout(p)
	create := "request.operation != 'UPDATE'"
	var expr string
	if l.config == nil {
		key := "[?" + celString(v1alpha1.AnnotationScaleConfig) + "]"
		cur, old := "object.?metadata.?annotations"+key, "oldObject.?metadata.?annotations"+key
		expr = fmt.Sprintf("%[1]s.hasValue() && (%[3]s || !%[2]s.hasValue() || %[1]s.value() != %[2]s.value())", cur, old, create)
	} else {
		c, oc := optional("object", l.config), optional("oldObject", l.config)
		others := fmt.Sprintf("%[1]s.value().exists(k, !(k in %[3]s) && (%[4]s || !%[2]s.hasValue() || type(%[2]s.value()) != map || !(k in %[2]s.value()) || %[2]s.value()[k] != %[1]s.value()[k]))",
			c, oc, celList(decided), create)
		conds := []string{fmt.Sprintf("%[1]s.hasValue() && (type(%[1]s.value()) != map || %[2]s)", c, others)}
		for _, dir := range []string{"scaleUp", "scaleDown"} {
			segs := append(slices.Clone(l.config), "behavior", dir, "tolerance")
			t, ot := optional("object", segs), optional("oldObject", segs)
			conds = append(conds, fmt.Sprintf("(%[1]s.hasValue() && (%[3]s || !%[2]s.hasValue() || %[1]s.value() != %[2]s.value()))", t, ot, create))
		}
		// The webhook checks a fallback's count and idle's replicasAtStart
		// against the bounds (V12, V6): a change of the bounds beside them
		// goes to it too.
		var bounds []string
		for _, f := range []string{"minReplicas", "maxReplicas"} {
			segs := append(slices.Clone(l.config), f)
			b, ob := optional("object", segs), optional("oldObject", segs)
			bounds = append(bounds, fmt.Sprintf("%[1]s.hasValue() != %[2]s.hasValue() || (%[1]s.hasValue() && %[1]s.value() != %[2]s.value())", b, ob))
		}
		conds = append(conds, fmt.Sprintf("(%[1]s.hasValue() && type(%[1]s.value()) == map && ('fallback' in %[1]s.value() || 'idle' in %[1]s.value()) && (%[3]s || %[2]s))",
			c, strings.Join(bounds, " || "), create))
		expr = strings.Join(conds, " || ")
	}
	return admissionregistrationv1.MatchCondition{Name: WebhookConditionName, Expression: expr}
}

// celList is ss as a CEL list of string literals.
func celList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = celString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
