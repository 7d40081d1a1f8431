package scaling

import (
	"fmt"
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits is what a CRD's served schema says of one integer field scaleplane
// writes: the values the API server accepts there. The zero value accepts
// every integer (no schema known, or a field without limits).
type Limits struct {
	// Known is true when the schema describes the field at all.
	Known bool
	// Type is the schema's type ("integer", "number"); empty when unset.
	Type string
	// Minimum and Maximum are the inclusive or exclusive bounds; nil when
	// the schema sets none.
	Minimum, Maximum *float64
	// ExclusiveMinimum and ExclusiveMaximum make the bounds strict.
	ExclusiveMinimum, ExclusiveMaximum bool
	// Default is the schema's default, nil when it has none. The API
	// server fills it in before admission, so a value equal to it may be
	// one the user never wrote.
	Default *int64
	// Nullable is true when the field may hold null.
	Nullable bool
}

// Schema is the limits of every field scaleplane writes, read from the CRD
// by package profile. The zero value limits nothing.
type Schema struct {
	// Replicas is R's field.
	Replicas Limits
	// MinReplicas and MaxReplicas are C's bounds at a spec path. An
	// annotation has no schema: both stay zero.
	MinReplicas, MaxReplicas Limits
	// Members is one member group's count field.
	Members Limits
	// DroppedConfig names, sorted, the scale config's fields that the
	// schema at a spec path neither declares nor preserves: the API server
	// prunes them from every object before admission, so a config that
	// sets them loses them without an error. Empty for an annotation or an
	// open schema.
	DroppedConfig []string
}

// limitsNothing reports whether the schema sets no limit on any field
// scaleplane writes (what it drops from the config is no limit).
func (s Schema) limitsNothing() bool {
	return s.Replicas == (Limits{}) && s.MinReplicas == (Limits{}) && s.MaxReplicas == (Limits{}) && s.Members == (Limits{})
}

// Refuses returns why the schema refuses v, naming the limit, or "" when it
// accepts it.
func (l Limits) Refuses(v int32) string {
	f := float64(v)
	if l.Minimum != nil {
		if l.ExclusiveMinimum && f <= *l.Minimum {
			return fmt.Sprintf("the CRD's schema requires a value greater than %s (exclusiveMinimum)", num(*l.Minimum))
		}
		if f < *l.Minimum {
			return fmt.Sprintf("the CRD's schema requires a value of at least %s (minimum)", num(*l.Minimum))
		}
	}
	if l.Maximum != nil {
		if l.ExclusiveMaximum && f >= *l.Maximum {
			return fmt.Sprintf("the CRD's schema requires a value less than %s (exclusiveMaximum)", num(*l.Maximum))
		}
		if f > *l.Maximum {
			return fmt.Sprintf("the CRD's schema requires a value of at most %s (maximum)", num(*l.Maximum))
		}
	}
	if l.Type != "" && l.Type != "integer" && l.Type != "number" {
		return fmt.Sprintf("the CRD's schema types the field %s, not integer", l.Type)
	}
	return ""
}

// IsDefault reports whether v is the schema's default for the field.
func (l Limits) IsDefault(v *int32) bool {
	return v != nil && l.Default != nil && int64(*v) == *l.Default
}

func num(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprint(f)
}

// SchemaRefusals returns, for every value of w that scaleplane writes (R,
// C's bounds at a spec path, each member group's count), the ones the
// schema in l refuses, at their exact paths. Values that are absent are
// not checked.
func SchemaRefusals(w Workload, l Layout) field.ErrorList {
	var errs field.ErrorList
	check := func(lim Limits, p *field.Path, v *int32) {
		if v == nil {
			return
		}
		if why := lim.Refuses(*v); why != "" {
			errs = append(errs, field.Invalid(p, *v, why))
		}
	}
	check(l.Schema.Replicas, replicasPath(l), w.Replicas)
	if c := w.Config; c != nil && !l.ConfigInAnnotation {
		check(l.Schema.MinReplicas, configPath(l).Child("minReplicas"), c.MinReplicas)
		check(l.Schema.MaxReplicas, configPath(l).Child("maxReplicas"), c.MaxReplicas)
	}
	for i, g := range w.Groups {
		check(l.Schema.Members, groupPath(l, i).Child(membersField(l)), g.Members)
	}
	return errs
}

func membersField(l Layout) string {
	if l.GroupMembersField != "" {
		return l.GroupMembersField
	}
	return "members"
}

// fitSchema is M7: it takes back every value Default wrote into w (from
// cur, the request) that the schema refuses, and says why in a warning.
// Values the user wrote are not its business: the API server judges them.
func fitSchema(cur Workload, w *Workload, l Layout) []string {
	if l.Schema.limitsNothing() {
		return nil
	}
	var warns []string
	if w.Replicas != nil && !sameValue(cur.Replicas, w.Replicas) {
		if why := l.Schema.Replicas.Refuses(*w.Replicas); why != "" {
			warns = append(warns, fmt.Sprintf("%s not set to %d: %s", replicasPath(l), *w.Replicas, why))
			w.Replicas = clonePtr(cur.Replicas)
		}
	}
	if c := w.Config; c != nil && !l.ConfigInAnnotation {
		minWhy := refusedWrite(l.Schema.MinReplicas, curBound(cur.Config, true), c.MinReplicas)
		maxWhy := refusedWrite(l.Schema.MaxReplicas, curBound(cur.Config, false), c.MaxReplicas)
		cp := configPath(l)
		switch {
		case minWhy == "" && maxWhy == "":
		case cur.Config == nil:
			// M1's pin as a whole: half a pin would be a range the user
			// never asked for.
			why, bound := minWhy, "minReplicas"
			if why == "" {
				why, bound = maxWhy, "maxReplicas"
			}
			warns = append(warns, fmt.Sprintf("%s not pinned to %d (M1): %s: %s; the object is scaled by %s alone until it has a scale config the schema accepts",
				cp, *c.MinReplicas, cp.Child(bound), why, replicasPath(l)))
			w.Config = nil
		case !sameValue(cur.Config.MinReplicas, c.MinReplicas) && !sameValue(cur.Config.MaxReplicas, c.MaxReplicas) &&
			cur.Config.MinReplicas != nil && cur.Config.MaxReplicas != nil:
			// M3 moved the pin as a whole; it stays as a whole, or a half
			// moved pin would be a range (or an empty one) nobody wrote.
			why, bound := minWhy, "minReplicas"
			if why == "" {
				why, bound = maxWhy, "maxReplicas"
			}
			warns = append(warns, fmt.Sprintf("%s stays pinned at %d, not %d (M3): %s: %s",
				cp, *cur.Config.MinReplicas, *c.MinReplicas, cp.Child(bound), why))
			c.MinReplicas, c.MaxReplicas = clonePtr(cur.Config.MinReplicas), clonePtr(cur.Config.MaxReplicas)
		default:
			// M2 filled a bound the schema refuses: leave it absent.
			if minWhy != "" {
				warns = append(warns, fmt.Sprintf("%s not set to %d: %s", cp.Child("minReplicas"), *c.MinReplicas, minWhy))
				c.MinReplicas = clonePtr(cur.Config.MinReplicas)
			}
			if maxWhy != "" {
				warns = append(warns, fmt.Sprintf("%s not set to %d: %s", cp.Child("maxReplicas"), *c.MaxReplicas, maxWhy))
				c.MaxReplicas = clonePtr(cur.Config.MaxReplicas)
			}
		}
	}
	for i := range w.Groups {
		var old *int32
		if i < len(cur.Groups) {
			old = cur.Groups[i].Members
		}
		if why := refusedWrite(l.Schema.Members, old, w.Groups[i].Members); why != "" {
			warns = append(warns, fmt.Sprintf("%s not set to %d: %s", groupPath(l, i).Child(membersField(l)), *w.Groups[i].Members, why))
			w.Groups[i].Members = clonePtr(old)
		}
	}
	return warns
}

// refusedWrite is why the schema refuses v, when v is a value Default
// wrote (it differs from old); "" otherwise.
func refusedWrite(lim Limits, old, v *int32) string {
	if v == nil || sameValue(old, v) {
		return ""
	}
	return lim.Refuses(*v)
}

func curBound(c *Config, min bool) *int32 {
	if c == nil {
		return nil
	}
	if min {
		return c.MinReplicas
	}
	return c.MaxReplicas
}

func sameValue(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// ScaleFollowUp is S2: a /scale write of r replicas to w is refused when a
// write the controller must make after it (C1: re-pinning a pinned config
// to {r, r}, giving every member group r members) is one the schema in l
// refuses, since the controller could then never finish what the write
// started. The error is at the Scale's spec.replicas and names the field
// and the schema's limit.
func ScaleFollowUp(w Workload, r int32, l Layout) *field.Error {
	if l.Schema.limitsNothing() {
		return nil
	}
	w.Replicas = &r
	want, changed := FanOut(w)
	if !changed {
		return nil
	}
	errs := SchemaRefusals(want, l)
	if len(errs) == 0 {
		return nil
	}
	var parts []string
	pinOnly := true
	for _, e := range errs {
		if e.Field == replicasPath(l).String() {
			continue
		}
		if e.Field != configPath(l).Child("minReplicas").String() && e.Field != configPath(l).Child("maxReplicas").String() {
			pinOnly = false
		}
		parts = append(parts, fmt.Sprintf("%s := %d, but %s", e.Field, r, e.Detail))
	}
	if len(parts) == 0 {
		return nil
	}
	// Advice the schema allows: the counts every follow-up write accepts,
	// and a range only when one holding r can be written and would spare
	// the pin (member groups follow R whatever the config).
	hint := followUpCounts(w, l)
	if w.Config.Pinned() && pinOnly && rangeHolds(l, r) {
		hint += ", or give the scale config a range that holds " + fmt.Sprint(r)
	}
	return field.Invalid(replicasPath(l), r,
		fmt.Sprintf("scaling to %d needs %s; %s", r, strings.Join(parts, "; "), hint))
}

// followUpCounts is the advice to scale to a count every follow-up write
// of w accepts (R, the member groups, a pin at a spec path).
func followUpCounts(w Workload, l Layout) string {
	lo, hi := CountLimits(l)
	if w.Config.Pinned() && !l.ConfigInAnnotation {
		for _, lim := range []Limits{l.Schema.MinReplicas, l.Schema.MaxReplicas} {
			a, b := lim.Accepted()
			lo, hi = max(lo, a), min(hi, b)
		}
	}
	lo = max(lo, 0)
	if l.MaxReplicas > 0 {
		hi = min(hi, l.MaxReplicas)
	}
	switch {
	case lo > hi:
		return "no count can be written to every field it is copied to: change the CRD's schema or the profile"
	case hi == math.MaxInt32:
		return fmt.Sprintf("scale to %d or more", lo)
	}
	return fmt.Sprintf("scale to a count from %d to %d", lo, hi)
}

// rangeHolds reports whether some range [lo, hi], lo <= r <= hi, lo < hi,
// has bounds the schema accepts (at a spec path, and in the fields its
// counts are written to).
func rangeHolds(l Layout, r int32) bool {
	cLo, cHi := CountLimits(l)
	minLo, minHi := cLo, cHi
	maxLo, maxHi := cLo, cHi
	if !l.ConfigInAnnotation {
		a, b := l.Schema.MinReplicas.Accepted()
		minLo, minHi = max(minLo, a), min(minHi, b)
		a, b = l.Schema.MaxReplicas.Accepted()
		maxLo, maxHi = max(maxLo, a), min(maxHi, b)
	}
	minLo = max(minLo, 0)
	if l.MaxReplicas > 0 {
		maxHi = min(maxHi, l.MaxReplicas)
	}
	// The lowest lo and the highest hi around r.
	lo, hi := minLo, maxHi
	return lo <= min(r, minHi) && hi >= max(r, maxLo) && lo < hi
}

// ReplicasUnset reports whether R counts as absent for the modes the
// contract tells apart by it: R is nil, or R equals the schema's default
// for the field while C has a range and the HPA targets a child. The API
// server fills a defaulted spec.replicas before any webhook sees the
// object, so without this the built-in HPA on a child (C4 with R absent)
// could never be reached on such a kind; to scale such a workload by hand
// at the default count, pin the config.
func ReplicasUnset(w Workload, l Layout) bool {
	if w.Replicas == nil {
		return true
	}
	return !l.TargetSelf && l.Schema.Replicas.IsDefault(w.Replicas) && effectiveConfig(w).HasRange()
}

// Accepted returns the lowest and highest int32 the limits accept; lo > hi
// when they accept none (a type that is not a number, bounds that cross).
func (l Limits) Accepted() (lo, hi int32) {
	lo, hi = math.MinInt32, math.MaxInt32
	if l.Type != "" && l.Type != "integer" && l.Type != "number" {
		return 1, 0
	}
	if m := l.Minimum; m != nil {
		c := math.Ceil(*m)
		if l.ExclusiveMinimum && c == *m {
			c++
		}
		lo = clampInt32(c)
	}
	if m := l.Maximum; m != nil {
		f := math.Floor(*m)
		if l.ExclusiveMaximum && f == *m {
			f--
		}
		hi = clampInt32(f)
	}
	return lo, hi
}

func clampInt32(f float64) int32 {
	switch {
	case f < math.MinInt32:
		return math.MinInt32
	case f > math.MaxInt32:
		return math.MaxInt32
	}
	return int32(f)
}

// CountLimits are the counts every field a count of R is written to
// accepts: R itself and, through the fan-out (C1), each member group's
// count. lo > hi when no count is accepted.
func CountLimits(l Layout) (lo, hi int32) {
	lo, hi = l.Schema.Replicas.Accepted()
	if l.GroupsPath != nil {
		mlo, mhi := l.Schema.Members.Accepted()
		lo, hi = max(lo, mlo), min(hi, mhi)
	}
	return lo, hi
}

// CanReachZero reports whether the schema lets R, and the member groups
// R is fanned out to, hold 0: whether the kind can be scaled to zero.
func CanReachZero(l Layout) bool {
	lo, hi := CountLimits(l)
	return lo <= 0 && hi >= 0
}

// countField names the field whose limit refuses n: R's path, or a member
// group's count field, with the limit in the schema's words.
func countRefusal(l Layout, n int32) (string, string) {
	if why := l.Schema.Replicas.Refuses(n); why != "" {
		return replicasPath(l).String(), why
	}
	if l.GroupsPath != nil {
		if why := l.Schema.Members.Refuses(n); why != "" {
			return l.GroupsPath.String() + "[*]." + membersField(l), why
		}
	}
	return "", ""
}

// validateRangeSchema holds a range's ends to the schema of the fields the
// autoscalers write its counts to (M7 for every config source: spec path,
// annotation or a library's type): the HPA and scaleplane's autoscaler
// write any count of [lo, hi] into R, and the fan-out copies R to the member
// groups, so a bound the schema refuses there becomes a write the API server
// refuses on every poll. lo and hi are the effective bounds (M2).
func validateRangeSchema(lo, hi int32, l Layout, minP, maxP *field.Path) field.ErrorList {
	if lo >= hi || l.Schema.limitsNothing() {
		return nil
	}
	okLo, okHi := CountLimits(l)
	var errs field.ErrorList
	if okLo > okHi {
		f, why := countRefusal(l, lo)
		return field.ErrorList{field.Invalid(minP, lo, fmt.Sprintf(
			"no count can be written to %s: %s; this kind cannot be autoscaled, so pin the config (minReplicas = maxReplicas)", f, why))}
	}
	if lo < okLo {
		f, why := countRefusal(l, lo)
		advice := fmt.Sprintf("set minReplicas to %d or more", okLo)
		if hi <= okLo {
			advice += ", and maxReplicas above it for a range"
		}
		if lo == 0 {
			advice += "; this kind cannot be scaled to zero"
		}
		errs = append(errs, field.Invalid(minP, lo, fmt.Sprintf(
			"the autoscaler writes every count from minReplicas to maxReplicas to %s, and %s; %s", f, why, advice)))
	}
	if hi > okHi {
		f, why := countRefusal(l, hi)
		advice := fmt.Sprintf("set maxReplicas to %d or less", okHi)
		if lo >= okHi {
			advice += ", and minReplicas below it for a range"
		}
		errs = append(errs, field.Invalid(maxP, hi, fmt.Sprintf(
			"the autoscaler writes every count from minReplicas to maxReplicas to %s, and %s; %s", f, why, advice)))
	}
	return errs
}

// FitCounts holds a decision of the built-in autoscaler to the counts the
// schema in l accepts (CountLimits), so that the autoscaler never plans a
// write the API server refuses on every poll: a desired count outside them
// becomes the nearest accepted one, and the reason says which limit held
// it. A config stored before the limits were enforced at admission (or a
// schema tightened since) can still ask for such a count.
func FitCounts(d Decision, l Layout) Decision {
	lo, hi := CountLimits(l)
	if lo > hi || (d.Desired >= lo && d.Desired <= hi) {
		return d
	}
	want := d.Desired
	fit := min(max(want, lo), hi)
	f, why := countRefusal(l, want)
	d.Desired = fit
	held := fmt.Sprintf("held at %d, not %d: %s cannot be %d: %s", fit, want, f, want, why)
	if d.Reason != "" {
		held += " (the autoscaler's own answer: " + d.Reason + ")"
	}
	switch {
	case fit == d.Current:
		d.Action = ActionNone
		d.Reason = fmt.Sprintf("Keep %d: %s", fit, held)
	case fit > d.Current:
		d.Action = ActionScaleUp
		d.Reason = fmt.Sprintf("Scale up from %d to %d: %s", d.Current, fit, held)
	default:
		d.Action = ActionScaleDown
		d.Reason = fmt.Sprintf("Scale down from %d to %d: %s", d.Current, fit, held)
	}
	return d
}
