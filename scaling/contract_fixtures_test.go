package scaling_test

import (
	"reflect"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/scaling"
)

// Helpers for the contract tests (default, validate, decide). Their names
// carry a ct prefix because other tests share this package.

func ctI32(v int32) *int32     { return &v }
func ctI64(v int64) *int64     { return &v }
func ctF64(v float64) *float64 { return &v }
func ctQ(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// ctLayout is a racked kind: spec.replicas, spec.scaleConfig, spec.racks
// with name/members, HPA on the workload itself, bound 100.
func ctLayout() scaling.Layout {
	return scaling.Layout{
		ReplicasPath:      field.NewPath("spec", "replicas"),
		ConfigPath:        field.NewPath("spec", "scaleConfig"),
		GroupsPath:        field.NewPath("spec", "racks"),
		GroupNameField:    "name",
		GroupMembersField: "members",
		TargetSelf:        true,
		MaxReplicas:       100,
	}
}

// ctKymaLayout is a Kyma-style function: HPA on a child Deployment.
func ctKymaLayout() scaling.Layout {
	return scaling.Layout{
		ReplicasPath: field.NewPath("spec", "replicas"),
		ConfigPath:   field.NewPath("spec", "scaleConfig"),
		TargetSelf:   false,
		MaxReplicas:  100,
	}
}

// ctAnnotationLayout keeps C in an annotation.
func ctAnnotationLayout() scaling.Layout {
	l := ctLayout()
	l.ConfigPath = field.NewPath("metadata", "annotations").Key("scaleplane.io/scale-config")
	l.ConfigInAnnotation = true
	return l
}

// ctRange is a config with both bounds.
func ctRange(lo, hi int32) *scaling.Config {
	return &scaling.Config{MinReplicas: ctI32(lo), MaxReplicas: ctI32(hi)}
}

// ctRacks makes racks rack-a, rack-b, ... with the given members; a negative
// count leaves members absent.
func ctRacks(members ...int32) []scaling.Group {
	gs := make([]scaling.Group, len(members))
	for i, m := range members {
		gs[i].Name = "rack-" + string(rune('a'+i))
		if m >= 0 {
			gs[i].Members = ctI32(m)
		}
	}
	return gs
}

func ctCPU(util int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{
			Name:   "cpu",
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ctI32(util)},
		},
	}
}

// ctSources are the trigger sources the contract tests admit triggers
// against: the built-in cron source, and "promql" and "prometheus" stand-ins
// whose only check is that a query is there (the real PromQL checks belong
// to the promql source, tested in controllers/autoscaler).
func ctSources() *scaling.Sources {
	s := scaling.NewSources()
	query := scaling.Source{
		Validate: func(t scaling.Trigger, p *field.Path) field.ErrorList {
			if t.Query == "" {
				return field.ErrorList{field.Required(p.Child("query"), "must be a query")}
			}
			return nil
		},
		New: scaling.QueryScaler(nil),
	}
	for name, src := range map[string]scaling.Source{scaling.SourceCron: scaling.CronSource(), scaling.SourcePromQL: query, scaling.SourcePrometheus: query} {
		if err := s.Register(name, src); err != nil {
			panic(err)
		}
	}
	return s
}

func ctTrigger(name, query string, threshold float64) scaling.Trigger {
	return scaling.Trigger{Name: name, Type: scaling.TargetAverageValue, Query: query, Threshold: threshold}
}

// ctFull is a three-rack workload with every part of a config set: metrics,
// behavior, idle and schedule (triggers in a second config, since V6 forbids
// both together; ctFullTriggers).
func ctFull() scaling.Workload {
	pods, percent := autoscalingv2.PodsScalingPolicy, autoscalingv2.PercentScalingPolicy
	maxSel := autoscalingv2.MaxChangePolicySelect
	return scaling.Workload{
		Replicas: ctI32(3),
		Config: &scaling.Config{
			MinReplicas: ctI32(1),
			MaxReplicas: ctI32(10),
			Metrics: []autoscalingv2.MetricSpec{
				ctCPU(70),
				{
					Type: autoscalingv2.PodsMetricSourceType,
					Pods: &autoscalingv2.PodsMetricSource{
						Metric: autoscalingv2.MetricIdentifier{Name: "requests_per_second"},
						Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ctQ("100")},
					},
				},
			},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: &autoscalingv2.HPAScalingRules{
					StabilizationWindowSeconds: ctI32(0),
					SelectPolicy:               &maxSel,
					Policies: []autoscalingv2.HPAScalingPolicy{
						{Type: pods, Value: 4, PeriodSeconds: 15},
						{Type: percent, Value: 100, PeriodSeconds: 15},
					},
					Tolerance: ctQ("0.05"),
				},
				ScaleDown: &autoscalingv2.HPAScalingRules{
					StabilizationWindowSeconds: ctI32(300),
					Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: percent, Value: 50, PeriodSeconds: 60}},
				},
			},
			Idle:     &scaling.Idle{ReplicasAtStart: ctI32(2), TimeoutSeconds: ctI32(600)},
			Schedule: &scaling.Schedule{TimeZone: "Europe/Paris", WakeUp: []string{"07:30"}, ScaleDownTimeout: []scaling.ScaleDownTimeout{{Time: "19:00", Seconds: 60}, {Time: "07:00", Seconds: 900}}},
		},
		Groups: ctRacks(3, 3, 3),
	}
}

// ctFullTriggers is ctFull driven by triggers instead of metrics.
func ctFullTriggers() scaling.Workload {
	w := ctFull()
	w.Config.Metrics = nil
	w.Config.Triggers = []scaling.Trigger{
		ctTrigger("rps", `sum(rate(http_requests_total{namespace="${namespace}",pod=~"${name}-.*"}[1m]))`, 100),
		{Name: "queue", Type: scaling.TargetValue, Query: `max(queue_depth{job="${name}"})`, Threshold: 10, ActivationThreshold: ctF64(1)},
	}
	w.Config.MinReplicas = ctI32(0)
	return w
}

// ctErr is the part of a field.Error the tests assert: type, path, value.
// Messages are checked separately (ctCheckDetails) so that wording can
// improve without touching every case.
type ctErr struct {
	Type     field.ErrorType
	Field    string
	BadValue any
}

func ctErrs(list field.ErrorList) []ctErr {
	var out []ctErr
	for _, e := range list {
		v := e.BadValue
		// Typed strings (MetricSourceType, ...) compare as plain strings.
		if rv := reflect.ValueOf(v); rv.IsValid() && rv.Kind() == reflect.String {
			v = rv.String()
		}
		out = append(out, ctErr{Type: e.Type, Field: e.Field, BadValue: v})
	}
	return out
}

// ctCheckDetails asserts that every error that needs words has them: an
// Invalid, Required or Forbidden error must say what to change.
func ctCheckDetails(t *testing.T, list field.ErrorList) {
	t.Helper()
	for _, e := range list {
		switch e.Type {
		case field.ErrorTypeInvalid, field.ErrorTypeRequired, field.ErrorTypeForbidden:
			if e.Detail == "" {
				t.Errorf("%s error at %s has no detail", e.Type, e.Field)
			}
		}
	}
}

func ctInvalid(path string, v any) ctErr { return ctErr{field.ErrorTypeInvalid, path, v} }
func ctRequired(path string) ctErr       { return ctErr{field.ErrorTypeRequired, path, ""} }
func ctForbidden(path string) ctErr      { return ctErr{field.ErrorTypeForbidden, path, ""} }
func ctDuplicate(path string, v any) ctErr {
	return ctErr{field.ErrorTypeDuplicate, path, v}
}
func ctNotSupported(path string, v any) ctErr {
	return ctErr{field.ErrorTypeNotSupported, path, v}
}
