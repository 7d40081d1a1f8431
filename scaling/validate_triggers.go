package scaling

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	// Validation must not depend on the zoneinfo of the image the webhook
	// runs in (distroless images have none): embed the IANA database.
	_ "time/tzdata"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

var triggerTypes = []string{string(TargetAverageValue), string(TargetValue)}

// validateTriggers is V5 and the source part of V10 and V11: the rules
// every trigger follows are here, what a source reads (its query, its
// metadata) its own Source.Validate checks. Without sources no trigger is
// accepted: nothing would ever read it.
func validateTriggers(ts []Trigger, p lazyPath, sources *Sources) field.ErrorList {
	var errs field.ErrorList
	seen := make(map[string]bool, len(ts))
	none := len(ts) > 0 && sources.empty()
	// The list's path is built once, and only when a trigger needs it.
	var list *field.Path
	for i, t := range ts {
		// Built only for an error, or for a source that checks something:
		// most triggers have no error.
		tp := func() *field.Path {
			if list == nil {
				list = p()
			}
			return list.Index(i)
		}
		switch {
		case t.Name == "":
			errs = append(errs, field.Required(tp().Child("name"), "every trigger needs a name, used in events and metrics"))
		case seen[t.Name]:
			errs = append(errs, field.Duplicate(tp().Child("name"), t.Name))
		}
		seen[t.Name] = true
		validType := false
		switch t.Type {
		case TargetValue, TargetAverageValue:
			validType = true
		case "":
			errs = append(errs, field.Required(tp().Child("type"), "must be Value or AverageValue"))
		default:
			errs = append(errs, field.NotSupported(tp().Child("type"), t.Type, triggerTypes))
		}
		if !(t.Threshold > 0) || math.IsInf(t.Threshold, 1) {
			errs = append(errs, field.Invalid(tp().Child("threshold"), t.Threshold,
				"must be a number greater than 0: the value one replica can take (AverageValue) or the target value (Value)"))
		}
		if a := t.ActivationThreshold; a != nil && (!(*a >= 0) || math.IsInf(*a, 1)) {
			errs = append(errs, field.Invalid(tp().Child("activationThreshold"), *a,
				"must be a number greater than or equal to 0"))
		}
		if none {
			errs = append(errs, field.Forbidden(tp(),
				"this scaleplane has no trigger autoscaler, so no trigger would ever be read; remove triggers (use metrics for an HPA), or run scaleplane with its autoscaler (the webhook needs the autoscaler's trigger sources)"))
			continue
		}
		errs = append(errs, validateSource(t, tp, validType, sources)...)
	}
	return errs
}

// validateSource is V11 for a trigger's source: it is registered and
// supports the trigger's type, and its own checks pass.
func validateSource(t Trigger, tp lazyPath, validType bool, sources *Sources) field.ErrorList {
	src, ok := sources.Lookup(t.Source)
	switch {
	case !ok && t.Source == "":
		return field.ErrorList{field.Required(tp().Child("source"), fmt.Sprintf(
			"this scaleplane has no default trigger source (%q is not registered); name one of: %s", sources.Default(), strings.Join(sources.Names(), ", ")))}
	case !ok:
		return field.ErrorList{field.NotSupported(tp().Child("source"), t.Source, sources.Names())}
	}
	var errs field.ErrorList
	if validType && !src.supports(t.Type) {
		supported := make([]string, len(src.Types))
		for i, st := range src.Types {
			supported[i] = string(st)
		}
		errs = append(errs, field.NotSupported(tp().Child("type"), t.Type, supported))
	}
	if src.Validate != nil {
		errs = append(errs, src.Validate(t, tp())...)
	}
	return errs
}

// validateIdle is V7 for scale-to-zero settings; maxReplicas is the
// effective upper bound (M2 applied).
func validateIdle(idle *Idle, maxReplicas int32, p lazyPath) field.ErrorList {
	if idle == nil {
		return nil
	}
	var errs field.ErrorList
	if r := idle.ReplicasAtStart; r != nil && (*r < 1 || *r > maxReplicas) {
		errs = append(errs, field.Invalid(p().Child("replicasAtStart"), *r, fmt.Sprintf(
			"must be between 1 and maxReplicas (%d): the count a workload wakes to from zero", maxReplicas)))
	}
	if s := idle.TimeoutSeconds; s != nil && *s < 0 {
		errs = append(errs, field.Invalid(p().Child("timeoutSeconds"), *s, "must be greater than or equal to 0"))
	}
	return errs
}

// validateFallback is V12: a threshold and a count KEDA would take,
// a known behavior, and a count inside the range (a fallback outside
// [min, max] would be clamped to it, so the number written would not be
// the one applied).
func validateFallback(f *Fallback, eff *Config, triggers int, p lazyPath) field.ErrorList {
	if f == nil {
		return nil
	}
	var errs field.ErrorList
	if f.FailureThreshold < 0 {
		errs = append(errs, field.Invalid(p().Child("failureThreshold"), f.FailureThreshold,
			"must be greater than or equal to 0: the failures in a row a trigger may have before the fallback applies"))
	}
	switch f.Behavior {
	case "", FallbackStatic, FallbackCurrentReplicas, FallbackCurrentReplicasIfHigher, FallbackCurrentReplicasIfLower:
	default:
		errs = append(errs, field.NotSupported(p().Child("behavior"), f.Behavior,
			[]string{string(FallbackStatic), string(FallbackCurrentReplicas), string(FallbackCurrentReplicasIfHigher), string(FallbackCurrentReplicasIfLower)}))
	}
	minR, maxR := int32(0), int32(0)
	if eff.MinReplicas != nil {
		minR = *eff.MinReplicas
	}
	if eff.MaxReplicas != nil {
		maxR = *eff.MaxReplicas
	}
	if f.Behavior != FallbackCurrentReplicas && (f.Replicas < max(minR, 1) || f.Replicas > maxR) {
		errs = append(errs, field.Invalid(p().Child("replicas"), f.Replicas, fmt.Sprintf(
			"must be between %d and maxReplicas (%d): the count a failing trigger stands for, at least 1 (a workload in fallback is never scaled to zero) and inside the range it would be clamped to", max(minR, 1), maxR)))
	}
	if triggers == 0 {
		errs = append(errs, field.Invalid(p(), "fallback", "applies to failing triggers, and this scale config has none: add triggers or remove fallback"))
	}
	return errs
}

// validateSchedule is V7 for time-of-day rules.
func validateSchedule(s *Schedule, p lazyPath) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	if s.TimeZone != "" {
		if !knownZone(s.TimeZone) {
			errs = append(errs, field.Invalid(p().Child("timeZone"), s.TimeZone,
				"must be an IANA time zone such as Europe/Paris; leave it empty for UTC"))
		}
	}
	for i, t := range s.WakeUp {
		if !validClock(t) {
			errs = append(errs, field.Invalid(p().Child("wakeUp").Index(i), t, clockMessage))
		}
	}
	seen := make(map[string]bool, len(s.ScaleDownTimeout))
	for i, e := range s.ScaleDownTimeout {
		ep := func() *field.Path { return p().Child("scaleDownTimeout").Index(i) }
		switch {
		case !validClock(e.Time):
			errs = append(errs, field.Invalid(ep().Child("time"), e.Time, clockMessage))
		case seen[e.Time]:
			// Two timeouts from the same minute on leave the one in force
			// undefined.
			errs = append(errs, field.Duplicate(ep().Child("time"), e.Time))
		}
		seen[e.Time] = true
		if e.Seconds < 0 {
			errs = append(errs, field.Invalid(ep().Child("seconds"), e.Seconds, "must be greater than or equal to 0"))
		}
	}
	return errs
}

// validZones remembers zone names that loaded, so that validating a
// schedule does not read the zone database on every admission request. Only
// valid names are kept, which bounds it by the IANA database's size whatever
// users send.
var validZones sync.Map // string -> struct{}

// knownZone reports whether name is an IANA zone. "Local" is refused: it is
// the webhook's own zone, which the user cannot know.
func knownZone(name string) bool {
	if name == "Local" {
		return false
	}
	if _, ok := validZones.Load(name); ok {
		return true
	}
	if _, err := time.LoadLocation(name); err != nil {
		return false
	}
	validZones.Store(name, struct{}{})
	return true
}

const clockMessage = "must be a time of day written HH:mm, from 00:00 to 23:59, such as 07:30"

// validClock accepts exactly HH:mm with two digits each; time.Parse would
// also take "7:30".
func validClock(s string) bool {
	if len(s) != 5 || s[2] != ':' {
		return false
	}
	for _, i := range []int{0, 1, 3, 4} {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	h := int(s[0]-'0')*10 + int(s[1]-'0')
	m := int(s[3]-'0')*10 + int(s[4]-'0')
	return h < 24 && m < 60
}
