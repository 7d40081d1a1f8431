package scaling

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// SlimFaas annotations, read as SlimFaas reads them on a Deployment or a
// StatefulSet (docs/slimfaas.md maps each to the Config it becomes).
const (
	SlimFaasPrefix                            = "SlimFaas/"
	SlimFaasFunction                          = "SlimFaas/Function"
	SlimFaasReplicasMin                       = "SlimFaas/ReplicasMin"
	SlimFaasReplicasAtStart                   = "SlimFaas/ReplicasAtStart"
	SlimFaasTimeoutSecondBeforeSetReplicasMin = "SlimFaas/TimeoutSecondBeforeSetReplicasMin"
	SlimFaasSchedule                          = "SlimFaas/Schedule"
	SlimFaasScale                             = "SlimFaas/Scale"
	SlimFaasDependsOn                         = "SlimFaas/DependsOn"
)

// SlimFaas's own defaults for the settings scaleplane acts on.
const (
	SlimFaasDefaultReplicasMin     = 0
	SlimFaasDefaultReplicasAtStart = 1
	SlimFaasDefaultTimeoutSeconds  = 300
	SlimFaasDefaultTimeZone        = "GB"
)

// slimFaasNotActedOn are the SlimFaas settings scaleplane reads no
// decision from (request routing, visibility, events, jobs): a workload
// carrying one is told so, never silently.
var slimFaasNotActedOn = map[string]string{
	"SlimFaas/NumberParallelRequest":                            "parallel requests are limited by the SlimFaas gateway, not by an autoscaler",
	"SlimFaas/NumberParallelRequestPerPod":                      "parallel requests are limited by the SlimFaas gateway, not by an autoscaler",
	"SlimFaas/ReplicasStartAsSoonAsOneFunctionRetrieveARequest": "activity wakes a function through POST /activity; scaleplane has no gateway queue to watch",
	"SlimFaas/SubscribeEvents":                                  "event subscriptions are routed by the SlimFaas gateway",
	"SlimFaas/DefaultVisibility":                                "visibility is enforced by the SlimFaas gateway",
	"SlimFaas/PathsStartWithVisibility":                         "visibility is enforced by the SlimFaas gateway",
	"SlimFaas/DefaultTrust":                                     "trust is enforced by the SlimFaas gateway",
	"SlimFaas/Configuration":                                    "HTTP timeouts and retries are the SlimFaas gateway's",
}

// SlimFaasIgnored names, sorted, each SlimFaas setting of ann that
// scaleplane does not act on, with why: the gateway's settings, fields of
// SlimFaas/Scale scaleplane has no equivalent for, and SlimFaas/ keys it
// does not know. The caller reports them as a Warning.
func SlimFaasIgnored(ann map[string]string) []string {
	var out []string
	for k, v := range ann {
		if !strings.HasPrefix(k, SlimFaasPrefix) {
			continue
		}
		switch k {
		case SlimFaasFunction, SlimFaasReplicasMin, SlimFaasReplicasAtStart, SlimFaasTimeoutSecondBeforeSetReplicasMin,
			SlimFaasSchedule, SlimFaasDependsOn:
			continue
		case SlimFaasScale:
			var s struct {
				ScrapeIntervalMilliseconds *int `json:"ScrapeIntervalMilliseconds"`
			}
			if json.Unmarshal([]byte(v), &s) == nil && s.ScrapeIntervalMilliseconds != nil {
				out = append(out, SlimFaasScale+".ScrapeIntervalMilliseconds: scaleplane scrapes every pod at the interval of its configuration (metrics.scrapeInterval), not per function")
			}
			continue
		}
		if why, ok := slimFaasNotActedOn[k]; ok {
			out = append(out, k+": "+why)
		} else {
			out = append(out, k+": not a SlimFaas setting scaleplane knows")
		}
	}
	sort.Strings(out)
	return out
}

// slimFaasScale is SlimFaas/Scale's JSON, with SlimFaas's field names.
type slimFaasScale struct {
	ReplicaMax                 *int32                `json:"ReplicaMax,omitempty"`
	ScrapeIntervalMilliseconds *int32                `json:"ScrapeIntervalMilliseconds,omitempty"`
	Triggers                   []slimFaasTrigger     `json:"Triggers,omitempty"`
	Behavior                   *slimFaasScaleBehavor `json:"Behavior,omitempty"`
}

type slimFaasTrigger struct {
	MetricType *string  `json:"MetricType,omitempty"`
	MetricName string   `json:"MetricName,omitempty"`
	Query      string   `json:"Query,omitempty"`
	Threshold  *float64 `json:"Threshold,omitempty"`
}

type slimFaasScaleBehavor struct {
	ScaleUp   *slimFaasDirection `json:"ScaleUp,omitempty"`
	ScaleDown *slimFaasDirection `json:"ScaleDown,omitempty"`
}

type slimFaasDirection struct {
	StabilizationWindowSeconds *int32           `json:"StabilizationWindowSeconds,omitempty"`
	Policies                   []slimFaasPolicy `json:"Policies,omitempty"`
}

type slimFaasPolicy struct {
	Type          *string `json:"Type,omitempty"`
	Value         *int32  `json:"Value,omitempty"`
	PeriodSeconds *int32  `json:"PeriodSeconds,omitempty"`
}

type slimFaasSchedule struct {
	TimeZoneID *string          `json:"TimeZoneID,omitempty"`
	Default    *slimFaasDefault `json:"Default,omitempty"`
}

type slimFaasDefault struct {
	WakeUp           []string                  `json:"WakeUp,omitempty"`
	ScaleDownTimeout []slimFaasScaleDownTimout `json:"ScaleDownTimeout,omitempty"`
}

type slimFaasScaleDownTimout struct {
	Time  *string `json:"Time,omitempty"`
	Value int32   `json:"Value"`
}

// FromSlimFaas translates a workload's SlimFaas annotations into the scale
// config they mean, with SlimFaas's defaults (ReplicasMin 0,
// ReplicasAtStart 1, TimeoutSecondBeforeSetReplicasMin 300, time zone GB,
// its default scale-up and scale-down policies). A workload whose
// SlimFaas/Function is absent or false is no function: nil, no errors.
//
// Where SlimFaas decides differently from an HPA, the config carries its
// decision: scale-down takes the most conservative policy (selectPolicy
// Min) and neither direction has a tolerance (0). Errors name the
// annotation (under root, usually metadata.annotations) and what to change;
// the JSON annotations are strict: a field SlimFaas does not define, or a
// value of the wrong type, is an error rather than a silent default.
func FromSlimFaas(ann map[string]string, root *field.Path) (*Config, field.ErrorList) {
	var errs field.ErrorList
	fn, ok := ann[SlimFaasFunction]
	if !ok || strings.TrimSpace(fn) == "" {
		return nil, nil
	}
	isFn, err := strconv.ParseBool(strings.ToLower(strings.TrimSpace(fn)))
	if err != nil || (strings.ToLower(strings.TrimSpace(fn)) != "true" && strings.ToLower(strings.TrimSpace(fn)) != "false") {
		return nil, field.ErrorList{field.Invalid(root.Key(SlimFaasFunction), fn, `must be "true" or "false"`)}
	}
	if !isFn {
		return nil, nil
	}
	intAnn := func(key string, def, minimum int32) int32 {
		raw, ok := ann[key]
		if !ok || strings.TrimSpace(raw) == "" {
			return def
		}
		n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 32)
		if err != nil || int32(n) < minimum {
			errs = append(errs, field.Invalid(root.Key(key), raw, fmt.Sprintf("must be an integer greater than or equal to %d", minimum)))
			return def
		}
		return int32(n)
	}
	minR := intAnn(SlimFaasReplicasMin, SlimFaasDefaultReplicasMin, 0)
	atStart := intAnn(SlimFaasReplicasAtStart, SlimFaasDefaultReplicasAtStart, 0)
	timeout := intAnn(SlimFaasTimeoutSecondBeforeSetReplicasMin, SlimFaasDefaultTimeoutSeconds, 0)
	if atStart == 0 {
		errs = append(errs, field.Invalid(root.Key(SlimFaasReplicasAtStart), ann[SlimFaasReplicasAtStart],
			"0 never wakes the function: scaleplane wakes a function to at least 1 replica; set 1 or more"))
		atStart = SlimFaasDefaultReplicasAtStart
	}
	c := &Config{
		Idle: &Idle{ReplicasAtStart: valuePtr(atStart), TimeoutSeconds: valuePtr(timeout)},
	}
	c.MinReplicas = valuePtr(minR)
	maxR := max(minR, atStart)

	if raw, ok := ann[SlimFaasDependsOn]; ok {
		for _, d := range strings.Split(raw, ",") {
			if d = strings.TrimSpace(d); d != "" {
				c.DependsOn = append(c.DependsOn, d)
			}
		}
	}

	if raw, ok := ann[SlimFaasSchedule]; ok && strings.TrimSpace(raw) != "" {
		p := root.Key(SlimFaasSchedule)
		var s slimFaasSchedule
		if err := strictJSON(raw, &s); err != nil {
			errs = append(errs, field.Invalid(p, raw, err.Error()))
		} else {
			c.Schedule = &Schedule{TimeZone: SlimFaasDefaultTimeZone}
			if s.TimeZoneID != nil {
				c.Schedule.TimeZone = *s.TimeZoneID
			}
			if s.Default != nil {
				c.Schedule.WakeUp = s.Default.WakeUp
				for _, t := range s.Default.ScaleDownTimeout {
					at := "00:00"
					if t.Time != nil {
						at = *t.Time
					}
					c.Schedule.ScaleDownTimeout = append(c.Schedule.ScaleDownTimeout, ScaleDownTimeout{Time: at, Seconds: t.Value})
				}
			}
		}
	}

	if raw, ok := ann[SlimFaasScale]; ok && strings.TrimSpace(raw) != "" {
		p := root.Key(SlimFaasScale)
		var s slimFaasScale
		if err := strictJSON(raw, &s); err != nil {
			errs = append(errs, field.Invalid(p, raw, err.Error()))
		} else {
			if s.ScrapeIntervalMilliseconds != nil && (*s.ScrapeIntervalMilliseconds < 1000 || *s.ScrapeIntervalMilliseconds > 300000) {
				errs = append(errs, field.Invalid(p, raw, "ScrapeIntervalMilliseconds must be between 1000 and 300000"))
			}
			if s.ReplicaMax != nil {
				if *s.ReplicaMax < max(minR, 1) {
					errs = append(errs, field.Invalid(p, raw, fmt.Sprintf("ReplicaMax %d is below %s (%d) or 1: raise ReplicaMax", *s.ReplicaMax, SlimFaasReplicasMin, minR)))
				} else {
					maxR = *s.ReplicaMax
					if atStart > maxR {
						errs = append(errs, field.Invalid(root.Key(SlimFaasReplicasAtStart), atStart, fmt.Sprintf("must not exceed ReplicaMax of %s (%d)", SlimFaasScale, maxR)))
					}
				}
			}
			errs = append(errs, slimFaasTriggers(c, s.Triggers, raw, p)...)
			c.Behavior = slimFaasBehavior(s.Behavior)
		}
	}
	c.MaxReplicas = valuePtr(maxR)
	return c, errs
}

// slimFaasTriggers adds SlimFaas's triggers to c. A trigger's name is its
// MetricName, or trigger-<index> when that is empty or taken (with a
// further -<n> when another trigger's MetricName is that already).
func slimFaasTriggers(c *Config, triggers []slimFaasTrigger, raw string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	given := make(map[string]bool, len(triggers))
	for _, t := range triggers {
		given[t.MetricName] = true
	}
	for i, t := range triggers {
		name := t.MetricName
		if name == "" || seen[name] {
			name = fmt.Sprintf("trigger-%d", i)
			for n := 1; seen[name] || given[name]; n++ {
				name = fmt.Sprintf("trigger-%d-%d", i, n)
			}
		}
		seen[name] = true
		typ := TargetAverageValue
		if t.MetricType != nil {
			switch TargetType(*t.MetricType) {
			case TargetAverageValue, TargetValue:
				typ = TargetType(*t.MetricType)
			default:
				errs = append(errs, field.Invalid(p, raw, fmt.Sprintf("Triggers[%d].MetricType %q must be AverageValue or Value", i, *t.MetricType)))
				continue
			}
		}
		if strings.TrimSpace(t.Query) == "" {
			errs = append(errs, field.Invalid(p, raw, fmt.Sprintf("Triggers[%d].Query is empty: give a PromQL query", i)))
			continue
		}
		if t.Threshold == nil || *t.Threshold <= 0 {
			errs = append(errs, field.Invalid(p, raw, fmt.Sprintf("Triggers[%d].Threshold must be greater than 0", i)))
			continue
		}
		c.Triggers = append(c.Triggers, Trigger{Name: name, Type: typ, Query: t.Query, Threshold: *t.Threshold})
	}
	return errs
}

// slimFaasBehavior is SlimFaas's behavior with its defaults (those of an
// HPA: scale-up 100% or 4 pods per 15 s, scale-down 100% per 15 s after a
// 300 s window), its scale-down taking the most conservative policy and
// neither direction a tolerance.
func slimFaasBehavior(b *slimFaasScaleBehavor) *autoscalingv2.HorizontalPodAutoscalerBehavior {
	if b == nil {
		b = &slimFaasScaleBehavor{}
	}
	upDefault := []autoscalingv2.HPAScalingPolicy{
		{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
	}
	downDefault := []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   slimFaasRules(b.ScaleUp, 0, upDefault, autoscalingv2.MaxChangePolicySelect),
		ScaleDown: slimFaasRules(b.ScaleDown, 300, downDefault, autoscalingv2.MinChangePolicySelect),
	}
}

func slimFaasRules(d *slimFaasDirection, window int32, def []autoscalingv2.HPAScalingPolicy, sel autoscalingv2.ScalingPolicySelect) *autoscalingv2.HPAScalingRules {
	zero := resource.MustParse("0")
	r := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: valuePtr(window), SelectPolicy: &sel, Tolerance: &zero, Policies: def}
	if d == nil {
		return r
	}
	// A direction given without its window has SlimFaas's 0, not the
	// default of the direction left out altogether.
	r.StabilizationWindowSeconds = valuePtr(int32(0))
	if d.StabilizationWindowSeconds != nil {
		r.StabilizationWindowSeconds = d.StabilizationWindowSeconds
	}
	if len(d.Policies) > 0 {
		r.Policies = nil
		for _, p := range d.Policies {
			hp := autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}
			if p.Type != nil {
				hp.Type = autoscalingv2.HPAScalingPolicyType(*p.Type)
			}
			if p.Value != nil {
				hp.Value = *p.Value
			}
			if p.PeriodSeconds != nil {
				hp.PeriodSeconds = *p.PeriodSeconds
			}
			r.Policies = append(r.Policies, hp)
		}
	}
	return r
}

// strictJSON decodes raw into v, case-sensitively (as SlimFaas's
// serializer does), refusing fields SlimFaas does not define.
func strictJSON(raw string, v any) error {
	strict, err := kjson.UnmarshalStrict([]byte(raw), v)
	if err != nil {
		return fmt.Errorf("not valid JSON: %v", err)
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("not SlimFaas's schema: %s", strings.Join(msgs, "; "))
	}
	return nil
}

func valuePtr[T any](v T) *T { return &v }
