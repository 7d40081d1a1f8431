package scaling_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scaleplane/scaleplane/scaling"
)

// validateCase is one object and the complete list of problems Validate
// must report for it, in order.
type validateCase struct {
	name   string
	layout *scaling.Layout
	w      scaling.Workload
	want   []ctErr
}

func runValidateCases(t *testing.T, cases []validateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := ctLayout()
			if tc.layout != nil {
				l = *tc.layout
			}
			got, _ := scaling.Validate(tc.w, l, ctSources())
			if diff := cmp.Diff(tc.want, ctErrs(got), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Validate errors (-want +got):\n%s\nfull: %v", diff, got)
			}
			ctCheckDetails(t, got)
		})
	}
}

// ctWithConfig is replicas 3 with a 1..10 range, changed by mut.
func ctWithConfig(mut func(c *scaling.Config)) scaling.Workload {
	w := scaling.Workload{Replicas: ctI32(3), Config: ctRange(1, 10)}
	mut(w.Config)
	return w
}

func ctWithMetric(m autoscalingv2.MetricSpec) scaling.Workload {
	return ctWithConfig(func(c *scaling.Config) { c.Metrics = []autoscalingv2.MetricSpec{m} })
}

func ctWithScaleUp(r autoscalingv2.HPAScalingRules) scaling.Workload {
	return ctWithConfig(func(c *scaling.Config) { c.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &r} })
}

func ctWithTriggers(ts ...scaling.Trigger) scaling.Workload {
	return ctWithConfig(func(c *scaling.Config) { c.Triggers = ts })
}

func ctWithSchedule(s scaling.Schedule) scaling.Workload {
	return ctWithConfig(func(c *scaling.Config) { c.Schedule = &s })
}

func TestValidateValidObjects(t *testing.T) {
	runValidateCases(t, []validateCase{
		{name: "valid full config with metrics, behavior, idle, schedule", w: ctFull()},
		{name: "valid full config with triggers", w: ctFullTriggers()},
		{name: "valid empty workload", w: scaling.Workload{}},
		{name: "valid replicas only", w: scaling.Workload{Replicas: ctI32(3)}},
	})
}

func TestValidateReplicas(t *testing.T) {
	unbounded := ctLayout()
	unbounded.MaxReplicas = 0
	runValidateCases(t, []validateCase{
		{name: "V1 negative replicas", w: scaling.Workload{Replicas: ctI32(-1)},
			want: []ctErr{ctInvalid("spec.replicas", int32(-1))}},
		{name: "V1 replicas above the profile bound", w: scaling.Workload{Replicas: ctI32(101)},
			want: []ctErr{ctInvalid("spec.replicas", int32(101))}},
		{name: "V1 replicas at the profile bound", w: scaling.Workload{Replicas: ctI32(100)}},
		{name: "V1 replicas 0", w: scaling.Workload{Replicas: ctI32(0)}},
		{name: "V1 no bound when the profile gives none", layout: &unbounded, w: scaling.Workload{Replicas: ctI32(5000)}},
	})
}

func TestValidateBounds(t *testing.T) {
	ann := ctAnnotationLayout()
	runValidateCases(t, []validateCase{
		{name: "V2 minReplicas greater than maxReplicas", w: scaling.Workload{Replicas: ctI32(3), Config: ctRange(5, 3)},
			want: []ctErr{ctInvalid("spec.scaleConfig.minReplicas", int32(5))}},
		{name: "V2 negative minReplicas", w: scaling.Workload{Config: ctRange(-1, 3)},
			want: []ctErr{ctInvalid("spec.scaleConfig.minReplicas", int32(-1))}},
		{name: "V2 negative maxReplicas", w: scaling.Workload{Config: ctRange(1, -2)},
			want: []ctErr{ctInvalid("spec.scaleConfig.maxReplicas", int32(-2))}},
		{name: "V2 maxReplicas above the profile bound", w: scaling.Workload{Config: ctRange(1, 101)},
			want: []ctErr{ctInvalid("spec.scaleConfig.maxReplicas", int32(101))}},
		{name: "V2 range from 0 without triggers or idle", w: scaling.Workload{Config: ctRange(0, 5)},
			want: []ctErr{ctInvalid("spec.scaleConfig.minReplicas", int32(0))}},
		{name: "V2 range from 0 with metrics only", w: scaling.Workload{Config: &scaling.Config{MinReplicas: ctI32(0), MaxReplicas: ctI32(5), Metrics: []autoscalingv2.MetricSpec{ctCPU(50)}}},
			want: []ctErr{ctInvalid("spec.scaleConfig.minReplicas", int32(0))}},
		{name: "V2 range from 0 with idle", w: scaling.Workload{Config: &scaling.Config{MinReplicas: ctI32(0), MaxReplicas: ctI32(5), Idle: &scaling.Idle{}}}},
		{name: "V2 range from 0 with triggers", w: scaling.Workload{Config: &scaling.Config{MinReplicas: ctI32(0), MaxReplicas: ctI32(5),
			Triggers: []scaling.Trigger{ctTrigger("rps", "sum(rate(x[1m]))", 5)}}}},
		{name: "V2 pinned at 0 (scaled to zero by hand)", w: scaling.Workload{Replicas: ctI32(0), Config: ctRange(0, 0)}},
		{name: "V2 maxReplicas 0 alone is pinned at 0", w: scaling.Workload{Replicas: ctI32(0), Config: &scaling.Config{MaxReplicas: ctI32(0)}}},
		{name: "V2 missing maxReplicas judged with M2 (max follows min)", w: scaling.Workload{Replicas: ctI32(3), Config: &scaling.Config{MinReplicas: ctI32(7)}}},
		{name: "V2 missing minReplicas judged with M2 (min 1 above max 0 impossible)", w: scaling.Workload{Config: &scaling.Config{MaxReplicas: ctI32(-1)}},
			want: []ctErr{ctInvalid("spec.scaleConfig.maxReplicas", int32(-1))}},
		{name: "V2 annotation-held config reports the annotation path", layout: &ann, w: scaling.Workload{Replicas: ctI32(3), Config: ctRange(5, 3)},
			want: []ctErr{ctInvalid("metadata.annotations[scaleplane.io/scale-config].minReplicas", int32(5))}},
	})
}

func TestValidateMetrics(t *testing.T) {
	const m0 = "spec.scaleConfig.metrics[0]"
	res := func(name string, target autoscalingv2.MetricTarget) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceName(name), Target: target}}
	}
	util := func(v int32) autoscalingv2.MetricTarget {
		return autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ctI32(v)}
	}
	avg := func(q string) autoscalingv2.MetricTarget {
		return autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ctQ(q)}
	}
	val := func(q string) autoscalingv2.MetricTarget {
		return autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ctQ(q)}
	}
	pods := func(name string, target autoscalingv2.MetricTarget) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType,
			Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: name}, Target: target}}
	}
	external := func(id autoscalingv2.MetricIdentifier, target autoscalingv2.MetricTarget) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType,
			External: &autoscalingv2.ExternalMetricSource{Metric: id, Target: target}}
	}
	object := func(ref autoscalingv2.CrossVersionObjectReference, target autoscalingv2.MetricTarget) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType,
			Object: &autoscalingv2.ObjectMetricSource{DescribedObject: ref, Metric: autoscalingv2.MetricIdentifier{Name: "hits"}, Target: target}}
	}
	container := func(res, ctr string, target autoscalingv2.MetricTarget) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType,
			ContainerResource: &autoscalingv2.ContainerResourceMetricSource{Name: corev1.ResourceName(res), Container: ctr, Target: target}}
	}
	svc := autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: "web"}
	withRes := func(m autoscalingv2.MetricSpec, name string) autoscalingv2.MetricSpec {
		if m.Resource != nil {
			m.Resource.Name = corev1.ResourceName(name)
		}
		if m.ContainerResource != nil {
			m.ContainerResource.Name = corev1.ResourceName(name)
		}
		return m
	}
	podsWithSelector := func(sel *metav1.LabelSelector) autoscalingv2.MetricSpec {
		m := pods("rps", avg("1"))
		m.Pods.Metric.Selector = sel
		return m
	}
	bothTargets := util(50)
	bothTargets.AverageValue = ctQ("100m")

	runValidateCases(t, []validateCase{
		// valid shapes of every source
		{name: "V3 valid Resource Utilization", w: ctWithMetric(res("cpu", util(80)))},
		{name: "V3 valid Resource AverageValue", w: ctWithMetric(res("cpu", avg("500m")))},
		{name: "V3 valid extended resource name", w: ctWithMetric(withRes(res("", avg("1")), "nvidia.com/gpu"))},
		{name: "V3 valid Pods AverageValue", w: ctWithMetric(pods("rps", avg("10")))},
		{name: "V3 valid Object Value on a core Service", w: ctWithMetric(object(svc, val("100")))},
		{name: "V3 valid External with selector", w: ctWithMetric(external(autoscalingv2.MetricIdentifier{Name: "queue_messages",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"queue": "jobs"}}}, avg("30")))},
		{name: "V3 valid ContainerResource", w: ctWithMetric(container("cpu", "app", util(60)))},

		// source type and the one source it names
		{name: "V3 metric type required", w: ctWithMetric(autoscalingv2.MetricSpec{Resource: res("cpu", util(50)).Resource}),
			want: []ctErr{ctRequired(m0 + ".type")}},
		{name: "V3 metric type not supported", w: ctWithMetric(autoscalingv2.MetricSpec{Type: "Cpu", Resource: res("cpu", util(50)).Resource}),
			want: []ctErr{ctNotSupported(m0+".type", "Cpu")}},
		{name: "V3 metric type without its source", w: ctWithMetric(autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType}),
			want: []ctErr{ctRequired(m0 + ".pods")}},
		{name: "V3 metric type with another source", w: ctWithMetric(autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Resource: res("cpu", util(50)).Resource}),
			want: []ctErr{ctRequired(m0 + ".pods"), ctForbidden(m0 + ".resource")}},
		{name: "V3 metric with two sources", w: ctWithMetric(autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: res("cpu", util(50)).Resource, Pods: pods("rps", avg("1")).Pods}),
			want: []ctErr{ctForbidden(m0 + ".pods")}},

		// target types allowed per source
		{name: "V3 Utilization target on a Pods metric", w: ctWithMetric(pods("rps", util(50))),
			want: []ctErr{ctNotSupported(m0+".pods.target.type", "Utilization")}},
		{name: "V3 Utilization target on an External metric", w: ctWithMetric(external(autoscalingv2.MetricIdentifier{Name: "q"}, util(50))),
			want: []ctErr{ctNotSupported(m0+".external.target.type", "Utilization")}},
		{name: "V3 Utilization target on an Object metric", w: ctWithMetric(object(svc, util(50))),
			want: []ctErr{ctNotSupported(m0+".object.target.type", "Utilization")}},
		{name: "V3 Value target on a Resource metric", w: ctWithMetric(res("cpu", val("1"))),
			want: []ctErr{ctNotSupported(m0+".resource.target.type", "Value")}},
		{name: "V3 Value target on a Pods metric", w: ctWithMetric(pods("rps", val("1"))),
			want: []ctErr{ctNotSupported(m0+".pods.target.type", "Value")}},
		{name: "V3 target type required", w: ctWithMetric(res("cpu", autoscalingv2.MetricTarget{AverageUtilization: ctI32(50)})),
			want: []ctErr{ctRequired(m0 + ".resource.target.type")}},
		{name: "V3 target type unknown", w: ctWithMetric(res("cpu", autoscalingv2.MetricTarget{Type: "Percent", AverageUtilization: ctI32(50)})),
			want: []ctErr{ctNotSupported(m0+".resource.target.type", "Percent")}},
		{name: "V3 target value its type reads is missing", w: ctWithMetric(res("cpu", autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType})),
			want: []ctErr{ctRequired(m0 + ".resource.target.averageUtilization")}},
		{name: "V3 target value of another type is set", w: ctWithMetric(res("cpu", bothTargets)),
			want: []ctErr{ctForbidden(m0 + ".resource.target.averageValue")}},
		{name: "V3 Value type on External needs value", w: ctWithMetric(external(autoscalingv2.MetricIdentifier{Name: "q"},
			autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, AverageValue: ctQ("3")})),
			want: []ctErr{ctRequired(m0 + ".external.target.value"), ctForbidden(m0 + ".external.target.averageValue")}},

		// values > 0
		{name: "V3 averageUtilization 0", w: ctWithMetric(res("cpu", util(0))),
			want: []ctErr{ctInvalid(m0+".resource.target.averageUtilization", int32(0))}},
		{name: "V3 averageValue 0", w: ctWithMetric(pods("rps", avg("0"))),
			want: []ctErr{ctInvalid(m0+".pods.target.averageValue", "0")}},
		{name: "V3 negative value", w: ctWithMetric(external(autoscalingv2.MetricIdentifier{Name: "q"}, val("-1"))),
			want: []ctErr{ctInvalid(m0+".external.target.value", "-1")}},

		// names
		{name: "V3 resource name required", w: ctWithMetric(withRes(res("", util(50)), "")),
			want: []ctErr{ctRequired(m0 + ".resource.name")}},
		{name: "V3 resource name not a resource", w: ctWithMetric(withRes(res("", util(50)), "gpu")),
			want: []ctErr{ctInvalid(m0+".resource.name", "gpu")}},
		{name: "V3 container resource name not a container resource", w: ctWithMetric(withRes(container("", "app", util(50)), "storage")),
			want: []ctErr{ctInvalid(m0+".containerResource.name", "storage")}},
		{name: "V3 container name required", w: ctWithMetric(container("cpu", "", util(50))),
			want: []ctErr{ctRequired(m0 + ".containerResource.container")}},
		{name: "V3 container name not a DNS label", w: ctWithMetric(container("cpu", "My_App", util(50))),
			want: []ctErr{ctInvalid(m0+".containerResource.container", "My_App")}},
		{name: "V3 metric name required", w: ctWithMetric(pods("", avg("1"))),
			want: []ctErr{ctRequired(m0 + ".pods.metric.name")}},
		{name: "V3 metric name not a path segment", w: ctWithMetric(pods("requests/s", avg("1"))),
			want: []ctErr{ctInvalid(m0+".pods.metric.name", "requests/s")}},
		{name: "V3 metric name dot-dot", w: ctWithMetric(pods("..", avg("1"))),
			want: []ctErr{ctInvalid(m0+".pods.metric.name", "..")}},
		{name: "V3 object reference kind and name required", w: ctWithMetric(object(autoscalingv2.CrossVersionObjectReference{APIVersion: "v1"}, val("1"))),
			want: []ctErr{ctRequired(m0 + ".object.describedObject.kind"), ctRequired(m0 + ".object.describedObject.name")}},
		{name: "V3 object reference apiVersion does not parse", w: ctWithMetric(object(autoscalingv2.CrossVersionObjectReference{APIVersion: "a/b/c", Kind: "Service", Name: "web"}, val("1"))),
			want: []ctErr{ctInvalid(m0+".object.describedObject.apiVersion", "a/b/c")}},

		// selectors
		{name: "V3 selector with an unknown operator", w: ctWithMetric(external(autoscalingv2.MetricIdentifier{Name: "q",
			Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "queue", Operator: "Among", Values: []string{"a"}}}}}, avg("1"))),
			want: []ctErr{ctInvalid(m0+".external.metric.selector.matchExpressions[0].operator", "Among")}},
		{name: "V3 selector with an invalid label key", w: ctWithMetric(external(autoscalingv2.MetricIdentifier{Name: "q",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"bad key": "x"}}}, avg("1"))),
			want: []ctErr{ctInvalid(m0+".external.metric.selector.matchLabels", "bad key")}},
		{name: "V3 selector In without values", w: ctWithMetric(podsWithSelector(&metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "queue", Operator: metav1.LabelSelectorOpIn}}})),
			want: []ctErr{ctRequired(m0 + ".pods.metric.selector.matchExpressions[0].values")}},
		{name: "V3 errors of the second metric carry its index", w: ctWithConfig(func(c *scaling.Config) {
			c.Metrics = []autoscalingv2.MetricSpec{ctCPU(50), ctCPU(0)}
		}), want: []ctErr{ctInvalid("spec.scaleConfig.metrics[1].resource.target.averageUtilization", int32(0))}},
	})
}

func TestValidateBehavior(t *testing.T) {
	const up = "spec.scaleConfig.behavior.scaleUp"
	pol := func(typ autoscalingv2.HPAScalingPolicyType, v, period int32) []autoscalingv2.HPAScalingPolicy {
		return []autoscalingv2.HPAScalingPolicy{{Type: typ, Value: v, PeriodSeconds: period}}
	}
	sel := func(s string) *autoscalingv2.ScalingPolicySelect {
		p := autoscalingv2.ScalingPolicySelect(s)
		return &p
	}
	pods := autoscalingv2.PodsScalingPolicy
	runValidateCases(t, []validateCase{
		{name: "V4 valid limits 0, 3600, 1 and 1800", w: ctWithConfig(func(c *scaling.Config) {
			c.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp:   &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ctI32(0), Policies: pol(pods, 1, 1), Tolerance: ctQ("0")},
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ctI32(3600), Policies: pol(autoscalingv2.PercentScalingPolicy, 100, 1800)},
			}
		})},
		{name: "V4 valid selectPolicy Disabled without policies", w: ctWithScaleUp(autoscalingv2.HPAScalingRules{SelectPolicy: sel("Disabled")})},
		{name: "V4 negative stabilization window", w: ctWithScaleUp(autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ctI32(-1)}),
			want: []ctErr{ctInvalid(up+".stabilizationWindowSeconds", int32(-1))}},
		{name: "V4 stabilization window 3601", w: ctWithScaleUp(autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ctI32(3601)}),
			want: []ctErr{ctInvalid(up+".stabilizationWindowSeconds", int32(3601))}},
		{name: "V4 selectPolicy Fastest", w: ctWithScaleUp(autoscalingv2.HPAScalingRules{SelectPolicy: sel("Fastest")}),
			want: []ctErr{ctNotSupported(up+".selectPolicy", "Fastest")}},
		{name: "V4 policy type Replicas", w: ctWithScaleUp(autoscalingv2.HPAScalingRules{Policies: pol("Replicas", 1, 15)}),
			want: []ctErr{ctNotSupported(up+".policies[0].type", "Replicas")}},
		{name: "V4 policy value 0", w: ctWithScaleUp(autoscalingv2.HPAScalingRules{Policies: pol(pods, 0, 15)}),
			want: []ctErr{ctInvalid(up+".policies[0].value", int32(0))}},
		{name: "V4 periodSeconds 0", w: ctWithScaleUp(autoscalingv2.HPAScalingRules{Policies: pol(pods, 1, 0)}),
			want: []ctErr{ctInvalid(up+".policies[0].periodSeconds", int32(0))}},
		{name: "V4 periodSeconds 1801", w: ctWithScaleUp(autoscalingv2.HPAScalingRules{Policies: pol(pods, 1, 1801)}),
			want: []ctErr{ctInvalid(up+".policies[0].periodSeconds", int32(1801))}},
		{name: "V4 explicit empty policy list", w: ctWithScaleUp(autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{}}),
			want: []ctErr{ctRequired(up + ".policies")}},
		{name: "V4 negative tolerance", w: ctWithConfig(func(c *scaling.Config) {
			c.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{Tolerance: ctQ("-0.1")}}
		}), want: []ctErr{ctInvalid("spec.scaleConfig.behavior.scaleDown.tolerance", "-100m")}},
		{name: "V4 every problem of a policy together", w: ctWithScaleUp(autoscalingv2.HPAScalingRules{Policies: pol("Fast", -1, 2000)}),
			want: []ctErr{
				ctNotSupported(up+".policies[0].type", "Fast"),
				ctInvalid(up+".policies[0].value", int32(-1)),
				ctInvalid(up+".policies[0].periodSeconds", int32(2000)),
			}},
	})
}

func TestValidateTriggers(t *testing.T) {
	const t0, t1 = "spec.scaleConfig.triggers[0]", "spec.scaleConfig.triggers[1]"
	q := func(query string) scaling.Trigger { return ctTrigger("rps", query, 10) }
	withSource := func(tr scaling.Trigger, source string) scaling.Trigger { tr.Source = source; return tr }
	withType := func(tr scaling.Trigger, typ scaling.TargetType) scaling.Trigger { tr.Type = typ; return tr }
	withActivation := func(tr scaling.Trigger, a float64) scaling.Trigger { tr.ActivationThreshold = &a; return tr }
	runValidateCases(t, []validateCase{
		{name: "V5 valid default source", w: ctWithTriggers(q(`sum(up)`))},
		{name: "V5 valid source prometheus", w: ctWithTriggers(withSource(q(`sum(up)`), "prometheus"))},
		{name: "V5 valid activationThreshold 0", w: ctWithTriggers(withActivation(q(`sum(up)`), 0))},
		{name: "V5 duplicate trigger names", w: ctWithTriggers(q(`sum(up)`), q(`sum(up)`)),
			want: []ctErr{ctDuplicate(t1+".name", "rps")}},
		{name: "V5 trigger name required", w: ctWithTriggers(ctTrigger("", `sum(up)`, 1)),
			want: []ctErr{ctRequired(t0 + ".name")}},
		{name: "V5 type Rate not supported", w: ctWithTriggers(withType(q(`sum(up)`), "Rate")),
			want: []ctErr{ctNotSupported(t0+".type", "Rate")}},
		{name: "V5 type required", w: ctWithTriggers(withType(q(`sum(up)`), "")),
			want: []ctErr{ctRequired(t0 + ".type")}},
		{name: "V5 type Utilization not supported", w: ctWithTriggers(withType(q(`sum(up)`), "Utilization")),
			want: []ctErr{ctNotSupported(t0+".type", "Utilization")}},
		{name: "V5 the source's own checks run", w: ctWithTriggers(withSource(q(""), "prometheus")),
			want: []ctErr{ctRequired(t0 + ".query")}},
		{name: "V5 threshold 0", w: ctWithTriggers(ctTrigger("rps", `sum(up)`, 0)),
			want: []ctErr{ctInvalid(t0+".threshold", float64(0))}},
		{name: "V5 negative threshold", w: ctWithTriggers(ctTrigger("rps", `sum(up)`, -5)),
			want: []ctErr{ctInvalid(t0+".threshold", float64(-5))}},
		{name: "V5 negative activationThreshold", w: ctWithTriggers(withActivation(q(`sum(up)`), -1)),
			want: []ctErr{ctInvalid(t0+".activationThreshold", float64(-1))}},
		{name: "V5 pollingIntervalSeconds 0", w: ctWithConfig(func(c *scaling.Config) { c.PollingIntervalSeconds = ctI32(0) }),
			want: []ctErr{ctInvalid("spec.scaleConfig.pollingIntervalSeconds", int32(0))}},
		{name: "V5 every problem of every trigger together", w: ctWithTriggers(ctTrigger("", "", 0), scaling.Trigger{Name: "b", Type: "x", Threshold: 1}),
			want: []ctErr{
				ctRequired(t0 + ".name"),
				ctInvalid(t0+".threshold", float64(0)),
				ctRequired(t0 + ".query"),
				ctNotSupported(t1+".type", "x"),
				ctRequired(t1 + ".query"),
			}},
	})
}

// TestV11References: what a config names must exist where it is used, or
// the object is refused at the field (each of these was once
// admitted, then broken at run time).
func TestV11References(t *testing.T) {
	const t0 = "spec.scaleConfig.triggers[0]"
	cron := func(typ scaling.TargetType, md map[string]string) scaling.Trigger {
		return scaling.Trigger{Name: "office", Type: typ, Source: scaling.SourceCron, Threshold: 1, Metadata: md}
	}
	window := map[string]string{"start": "08:00", "end": "19:00"}
	withSource := func(tr scaling.Trigger, source string) scaling.Trigger { tr.Source = source; return tr }
	withQuery := func(tr scaling.Trigger, q string) scaling.Trigger { tr.Query = q; return tr }
	deps := func(name string, d ...string) scaling.Workload {
		w := ctWithConfig(func(c *scaling.Config) { c.DependsOn = d })
		w.Name = name
		return w
	}
	selectorLayout := ctLayout()
	selectorLayout.GroupNamesInSelector = true
	racks := func(names ...string) scaling.Workload {
		w := scaling.Workload{Replicas: ctI32(2)}
		for _, n := range names {
			w.Groups = append(w.Groups, scaling.Group{Name: n, Members: ctI32(2)})
		}
		return w
	}
	long := strings.Repeat("r", 64)
	onlyCron := scaling.NewSources()
	if err := onlyCron.Register(scaling.SourceCron, scaling.CronSource()); err != nil {
		t.Fatal(err)
	}
	runValidateCases(t, []validateCase{
		// Sources and the types they support.
		{name: "V11 unknown trigger source", w: ctWithTriggers(withSource(ctTrigger("rps", "sum(up)", 1), "kafka")),
			want: []ctErr{ctNotSupported(t0+".source", "kafka")}},
		{name: "V11 valid cron trigger", w: ctWithTriggers(cron(scaling.TargetAverageValue, map[string]string{"start": "08:00", "end": "19:00", "timezone": "Europe/Paris", "days": "Mon-Fri", "desiredReplicas": "3"}))},
		{name: "V11 cron trigger of type Value", w: ctWithTriggers(cron(scaling.TargetValue, window)),
			want: []ctErr{ctNotSupported(t0+".type", "Value")}},
		{name: "V11 cron trigger without a window", w: ctWithTriggers(cron(scaling.TargetAverageValue, nil)),
			want: []ctErr{ctRequired(t0 + ".metadata")}},
		{name: "V11 cron trigger with a query", w: ctWithTriggers(withQuery(cron(scaling.TargetAverageValue, window), "sum(up)")),
			want: []ctErr{ctForbidden(t0 + ".query")}},
		{name: "V11 cron metadata it cannot read", w: ctWithTriggers(cron(scaling.TargetAverageValue, map[string]string{
			"start": "8am", "end": "08:00", "timeZone": "Europe/Paris", "days": "Mon-Fry", "desiredReplicas": "-1"})),
			want: []ctErr{
				ctInvalid(t0+".metadata[days]", "Mon-Fry"),
				ctInvalid(t0+".metadata[desiredReplicas]", "-1"),
				ctInvalid(t0+".metadata[start]", "8am"),
				ctNotSupported(t0+".metadata[timeZone]", "timeZone"),
			}},
		{name: "V11 cron window that is empty", w: ctWithTriggers(cron(scaling.TargetAverageValue, map[string]string{"start": "08:00", "end": "08:00", "timezone": "Mars/Olympus"})),
			want: []ctErr{ctInvalid(t0+".metadata[end]", "08:00"), ctInvalid(t0+".metadata[timezone]", "Mars/Olympus")}},
		{name: "V11 cron window without its end", w: ctWithTriggers(cron(scaling.TargetAverageValue, map[string]string{"start": "08:00"})),
			want: []ctErr{ctRequired(t0 + ".metadata[end]")}},
		// Group names in a selector.
		{name: "V11 group name with a slash in a selector", layout: &selectorLayout, w: racks("rack/a", "rack-b"),
			want: []ctErr{ctInvalid("spec.racks[0].name", "rack/a")}},
		{name: "V11 group name starting with a dash in a selector", layout: &selectorLayout, w: racks("-a"),
			want: []ctErr{ctInvalid("spec.racks[0].name", "-a")}},
		{name: "V11 group name of 64 characters in a selector", layout: &selectorLayout, w: racks(long),
			want: []ctErr{ctInvalid("spec.racks[0].name", long)}},
		{name: "V11 valid group names in a selector", layout: &selectorLayout, w: racks("rack-a", "Rack_B.2")},
		{name: "V11 group names outside any selector are not label values", w: racks("rack/a")},
		// dependsOn.
		{name: "V11 valid dependsOn", w: deps("app", "db", "cache.v2")},
		{name: "V11 empty dependsOn entry", w: deps("app", "db", ""),
			want: []ctErr{ctRequired("spec.scaleConfig.dependsOn[1]")}},
		{name: "V11 duplicate dependsOn entry", w: deps("app", "db", "db"),
			want: []ctErr{ctDuplicate("spec.scaleConfig.dependsOn[1]", "db")}},
		{name: "V11 workload depends on itself", w: deps("app", "app"),
			want: []ctErr{ctInvalid("spec.scaleConfig.dependsOn[0]", "app")}},
		{name: "V11 dependsOn not an object name", w: deps("app", "Not_A_Name", "db/x"),
			want: []ctErr{ctInvalid("spec.scaleConfig.dependsOn[0]", "Not_A_Name"), ctInvalid("spec.scaleConfig.dependsOn[1]", "db/x")}},
		{name: "V11 self-reference unknown without a name", w: deps("", "app")},
	})

	// Without sources (no trigger autoscaler), or without the default one,
	// a trigger cannot be admitted.
	for name, tc := range map[string]struct {
		sources *scaling.Sources
		want    []ctErr
		message string
	}{
		"V11 no trigger autoscaler":       {nil, []ctErr{ctForbidden(t0)}, "this scaleplane has no trigger autoscaler"},
		"V11 no trigger sources":          {scaling.NewSources(), []ctErr{ctForbidden(t0)}, "remove triggers"},
		"V11 default source not provided": {onlyCron, []ctErr{ctRequired(t0 + ".source")}, `no default trigger source ("promql" is not registered); name one of: cron`},
	} {
		t.Run(name, func(t *testing.T) {
			got, _ := scaling.Validate(ctWithTriggers(ctTrigger("rps", "sum(up)", 1)), ctLayout(), tc.sources)
			if diff := cmp.Diff(tc.want, ctErrs(got)); diff != "" {
				t.Fatalf("Validate errors (-want +got):\n%s", diff)
			}
			if !strings.Contains(got[0].Detail, tc.message) {
				t.Errorf("message %q does not say %q", got[0].Detail, tc.message)
			}
		})
	}
}

func TestValidateMetricsAndTriggers(t *testing.T) {
	runValidateCases(t, []validateCase{
		{name: "V6 metrics and triggers together", w: ctWithConfig(func(c *scaling.Config) {
			c.Metrics = []autoscalingv2.MetricSpec{ctCPU(50)}
			c.Triggers = []scaling.Trigger{ctTrigger("rps", "sum(up)", 1)}
		}), want: []ctErr{ctForbidden("spec.scaleConfig.triggers")}},
		{name: "V6 metrics alone", w: ctWithConfig(func(c *scaling.Config) { c.Metrics = []autoscalingv2.MetricSpec{ctCPU(50)} })},
		{name: "V6 triggers alone", w: ctWithTriggers(ctTrigger("rps", "sum(up)", 1))},
	})
}

func TestValidateIdleAndSchedule(t *testing.T) {
	const s = "spec.scaleConfig.schedule"
	idle := func(i scaling.Idle) scaling.Workload { return ctWithConfig(func(c *scaling.Config) { c.Idle = &i }) }
	runValidateCases(t, []validateCase{
		{name: "V7 valid UTC", w: ctWithSchedule(scaling.Schedule{TimeZone: "UTC"})},
		{name: "V7 valid empty time zone", w: ctWithSchedule(scaling.Schedule{WakeUp: []string{"00:00", "23:59"}})},
		{name: "V7 valid America/Argentina/Buenos_Aires", w: ctWithSchedule(scaling.Schedule{TimeZone: "America/Argentina/Buenos_Aires"})},
		{name: "V7 bad time zone", w: ctWithSchedule(scaling.Schedule{TimeZone: "Mars/Olympus_Mons"}),
			want: []ctErr{ctInvalid(s+".timeZone", "Mars/Olympus_Mons")}},
		{name: "V7 time zone Local", w: ctWithSchedule(scaling.Schedule{TimeZone: "Local"}),
			want: []ctErr{ctInvalid(s+".timeZone", "Local")}},
		{name: "V7 wakeUp 25:00", w: ctWithSchedule(scaling.Schedule{WakeUp: []string{"07:00", "25:00"}}),
			want: []ctErr{ctInvalid(s+".wakeUp[1]", "25:00")}},
		{name: "V7 wakeUp 24:00", w: ctWithSchedule(scaling.Schedule{WakeUp: []string{"24:00"}}),
			want: []ctErr{ctInvalid(s+".wakeUp[0]", "24:00")}},
		{name: "V7 wakeUp 12:60", w: ctWithSchedule(scaling.Schedule{WakeUp: []string{"12:60"}}),
			want: []ctErr{ctInvalid(s+".wakeUp[0]", "12:60")}},
		{name: "V7 wakeUp 7:30 without leading zero", w: ctWithSchedule(scaling.Schedule{WakeUp: []string{"7:30"}}),
			want: []ctErr{ctInvalid(s+".wakeUp[0]", "7:30")}},
		{name: "V7 wakeUp with seconds", w: ctWithSchedule(scaling.Schedule{WakeUp: []string{"07:30:00"}}),
			want: []ctErr{ctInvalid(s+".wakeUp[0]", "07:30:00")}},
		{name: "V7 wakeUp 7pm", w: ctWithSchedule(scaling.Schedule{WakeUp: []string{"7pm"}}),
			want: []ctErr{ctInvalid(s+".wakeUp[0]", "7pm")}},
		{name: "V7 scaleDownTimeout time invalid", w: ctWithSchedule(scaling.Schedule{ScaleDownTimeout: []scaling.ScaleDownTimeout{{Time: "1900", Seconds: 60}}}),
			want: []ctErr{ctInvalid(s+".scaleDownTimeout[0].time", "1900")}},
		{name: "V7 scaleDownTimeout duplicate time", w: ctWithSchedule(scaling.Schedule{ScaleDownTimeout: []scaling.ScaleDownTimeout{{Time: "19:00", Seconds: 60}, {Time: "19:00", Seconds: 5}}}),
			want: []ctErr{ctDuplicate(s+".scaleDownTimeout[1].time", "19:00")}},
		{name: "V7 scaleDownTimeout negative seconds", w: ctWithSchedule(scaling.Schedule{ScaleDownTimeout: []scaling.ScaleDownTimeout{{Time: "19:00", Seconds: -1}}}),
			want: []ctErr{ctInvalid(s+".scaleDownTimeout[0].seconds", int32(-1))}},
		{name: "V7 valid timeout 0", w: idle(scaling.Idle{TimeoutSeconds: ctI32(0)})},
		{name: "V7 negative idle timeout", w: idle(scaling.Idle{TimeoutSeconds: ctI32(-30)}),
			want: []ctErr{ctInvalid("spec.scaleConfig.idle.timeoutSeconds", int32(-30))}},
		{name: "V7 replicasAtStart 0", w: idle(scaling.Idle{ReplicasAtStart: ctI32(0)}),
			want: []ctErr{ctInvalid("spec.scaleConfig.idle.replicasAtStart", int32(0))}},
		{name: "V7 replicasAtStart above maxReplicas", w: idle(scaling.Idle{ReplicasAtStart: ctI32(11)}),
			want: []ctErr{ctInvalid("spec.scaleConfig.idle.replicasAtStart", int32(11))}},
		{name: "V7 replicasAtStart at maxReplicas", w: idle(scaling.Idle{ReplicasAtStart: ctI32(10)})},
	})
}

func TestValidateGroups(t *testing.T) {
	custom := ctLayout()
	custom.GroupNameField, custom.GroupMembersField = "rackName", "size"
	named := func(names ...string) []scaling.Group {
		gs := make([]scaling.Group, len(names))
		for i, n := range names {
			gs[i] = scaling.Group{Name: n, Members: ctI32(1)}
		}
		return gs
	}
	runValidateCases(t, []validateCase{
		{name: "V8 valid racks", w: scaling.Workload{Groups: ctRacks(0, 1, 2)}},
		{name: "V8 duplicate rack names", w: scaling.Workload{Groups: named("rack-a", "rack-b", "rack-a")},
			want: []ctErr{ctDuplicate("spec.racks[2].name", "rack-a")}},
		{name: "V8 rack name required", w: scaling.Workload{Groups: named("", "rack-b")},
			want: []ctErr{ctRequired("spec.racks[0].name")}},
		{name: "V8 negative members", w: scaling.Workload{Groups: []scaling.Group{{Name: "a", Members: ctI32(1)}, {Name: "b", Members: ctI32(-1)}}},
			want: []ctErr{ctInvalid("spec.racks[1].members", int32(-1))}},
		{name: "V8 absent members is valid", w: scaling.Workload{Groups: ctRacks(-1, -1)}},
		{name: "V8 profile field names in paths", layout: &custom, w: scaling.Workload{Groups: []scaling.Group{{Name: "x", Members: ctI32(-2)}, {Name: "x"}}},
			want: []ctErr{ctInvalid("spec.racks[0].size", int32(-2)), ctDuplicate("spec.racks[1].rackName", "x")}},
	})
}

// TestValidateEverythingTogether checks that one object's problems all come
// back in one list (the 422 lists every cause), in a stable order.
func TestValidateEverythingTogether(t *testing.T) {
	w := ctFull()
	w.Replicas = ctI32(-3)
	w.Config.MinReplicas = ctI32(20)
	w.Config.Metrics[0].Resource.Target.AverageUtilization = ctI32(0)
	w.Config.Behavior.ScaleUp.Policies[0].PeriodSeconds = 0
	w.Config.Triggers = []scaling.Trigger{ctTrigger("rps", "", 1)}
	w.Config.Schedule.TimeZone = "Nowhere"
	w.Groups[2].Name = "rack-a"
	got, _ := scaling.Validate(w, ctLayout(), ctSources())
	want := []ctErr{
		ctInvalid("spec.replicas", int32(-3)),
		ctInvalid("spec.scaleConfig.minReplicas", int32(20)),
		ctInvalid("spec.scaleConfig.metrics[0].resource.target.averageUtilization", int32(0)),
		ctInvalid("spec.scaleConfig.behavior.scaleUp.policies[0].periodSeconds", int32(0)),
		ctRequired("spec.scaleConfig.triggers[0].query"),
		ctForbidden("spec.scaleConfig.triggers"),
		ctInvalid("spec.scaleConfig.schedule.timeZone", "Nowhere"),
		ctDuplicate("spec.racks[2].name", "rack-a"),
	}
	if diff := cmp.Diff(want, ctErrs(got)); diff != "" {
		t.Errorf("Validate errors (-want +got):\n%s", diff)
	}
}

// TestValidateMessages pins the parts of messages users act on: what to
// change, and where the parser found the problem.
func TestValidateMessages(t *testing.T) {
	cases := []struct {
		name string
		w    scaling.Workload
		want []string
	}{
		{name: "V1 says the bound", w: scaling.Workload{Replicas: ctI32(101)}, want: []string{"less than or equal to 100"}},
		{name: "V2 says how to fix min above max", w: scaling.Workload{Config: ctRange(5, 3)},
			want: []string{"must be less than or equal to maxReplicas (3); raise maxReplicas or lower minReplicas"}},
		{name: "V2 says why a range cannot start at 0", w: scaling.Workload{Config: ctRange(0, 3)}, want: []string{"an HPA cannot scale to zero", "triggers or idle"}},
		{name: "V7 names an example zone", w: ctWithSchedule(scaling.Schedule{TimeZone: "Paris"}), want: []string{"IANA time zone such as Europe/Paris"}},
		{name: "V7 names the clock format", w: ctWithSchedule(scaling.Schedule{WakeUp: []string{"25:00"}}), want: []string{"HH:mm", "23:59"}},
		{name: "V3 names the allowed target types", w: ctWithMetric(autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType,
			Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "rps"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ctI32(5)}}}),
			want: []string{`supported values: "AverageValue"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs, _ := scaling.Validate(tc.w, ctLayout(), ctSources())
			msg := errs.ToAggregate()
			if msg == nil {
				t.Fatalf("Validate returned no error, want one containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg.Error(), w) {
					t.Errorf("message %q does not contain %q", msg.Error(), w)
				}
			}
		})
	}
}

func TestValidateWarnings(t *testing.T) {
	cases := []struct {
		name   string
		layout scaling.Layout
		w      scaling.Workload
		want   []string
	}{
		{name: "W1 replicas below a range the HPA scales", layout: ctLayout(), w: ctW1(1, ctWithMetrics(ctRange(2, 5))),
			want: []string{"spec.replicas (1) is outside spec.scaleConfig [2, 5]: the built-in HPA will move it to 2; set it within the range or widen the range"}},
		{name: "W1 replicas above a range the HPA scales", layout: ctLayout(), w: ctW1(9, ctWithMetrics(ctRange(2, 5))),
			want: []string{"spec.replicas (9) is outside spec.scaleConfig [2, 5]: the built-in HPA will move it to 5; set it within the range or widen the range"}},
		{name: "W1 replicas above a range with the profile's default metrics", layout: ctDefaultMetricsLayout(), w: ctW1(9, ctRange(2, 5)),
			want: []string{"spec.replicas (9) is outside spec.scaleConfig [2, 5]: the built-in HPA will move it to 5; set it within the range or widen the range"}},
		{name: "W1 replicas at 0 below a range the HPA scales: the HPA cannot act", layout: ctLayout(), w: ctW1(0, ctWithMetrics(ctRange(2, 5))),
			want: []string{"spec.replicas (0) is outside spec.scaleConfig [2, 5] and nothing will move it: the built-in HPA does not scale a workload at 0 replicas (the HPA controller reports ScalingDisabled): spec.replicas stays at 0 until it is set to at least 1; set it within the range"}},
		{name: "W1 replicas at 0 below a range with triggers", layout: ctLayout(), w: ctW1(0, ctWithTrigger(ctRange(2, 5))),
			want: []string{"spec.replicas (0) is outside spec.scaleConfig [2, 5]: scaleplane's autoscaler will move it to 2; set it within the range or widen the range"}},
		{name: "W1 a range without metrics, triggers or idle settings: nothing moves it", layout: ctLayout(), w: ctW1(9, ctRange(2, 5)),
			want: []string{"spec.replicas (9) is outside spec.scaleConfig [2, 5] and nothing will move it: the range 2..5 has no metrics, triggers or idle settings, so no autoscaler of scaleplane's acts in it: spec.replicas stays where kubectl scale or your own autoscaler sets it; set it within the range"}},
		{name: "W1 replicas inside the range", layout: ctLayout(), w: scaling.Workload{Replicas: ctI32(5), Config: ctRange(2, 5)}},
		{name: "W1 pin equal to replicas does not warn", layout: ctLayout(), w: scaling.Workload{Replicas: ctI32(4), Config: ctRange(4, 4)}},
		{name: "W1 pin that disagrees with replicas warns", layout: ctLayout(), w: scaling.Workload{Replicas: ctI32(3), Config: ctRange(4, 4)},
			want: []string{"spec.scaleConfig is pinned at 4 while spec.replicas is 3: a pinned config follows replicas, so it will become 3; set spec.replicas to 4, or give the config a range"}},
		{name: "W1 pin from M2 below minReplicas warns", layout: ctLayout(), w: scaling.Workload{Replicas: ctI32(1), Config: &scaling.Config{MinReplicas: ctI32(2)}},
			want: []string{"spec.scaleConfig is pinned at 2 while spec.replicas is 1: a pinned config follows replicas, so it will become 1; set spec.replicas to 2, or give the config a range"}},
		{name: "W1 pin that disagrees with replicas warns on a child target too", layout: ctKymaLayout(), w: scaling.Workload{Replicas: ctI32(3), Config: ctRange(4, 4)},
			want: []string{"spec.scaleConfig is pinned at 4 while spec.replicas is 3: a pinned config follows replicas, so it will become 3; set spec.replicas to 4, or give the config a range"}},
		{name: "W1 no replicas does not warn", layout: ctLayout(), w: scaling.Workload{Config: ctRange(4, 6)}},
		{name: "W2 range ignored while replicas is set on a child target", layout: ctKymaLayout(), w: scaling.Workload{Replicas: ctI32(2), Config: ctRange(1, 5)},
			want: []string{"spec.scaleConfig is ignored while spec.replicas is set (external scaling mode): no built-in autoscaler will act on it; remove spec.replicas to let it scale the workload"}},
		{name: "W2 pinned config with metrics warns", layout: ctKymaLayout(), w: scaling.Workload{Replicas: ctI32(2), Config: &scaling.Config{
			MinReplicas: ctI32(2), MaxReplicas: ctI32(2), Metrics: []autoscalingv2.MetricSpec{ctCPU(50)}}},
			want: []string{"spec.scaleConfig is ignored while spec.replicas is set (external scaling mode): no built-in autoscaler will act on it; remove spec.replicas to let it scale the workload"}},
		{name: "W2 pin written by M1 does not warn", layout: ctKymaLayout(), w: scaling.Workload{Replicas: ctI32(2), Config: ctRange(2, 2)}},
		{name: "W2 no replicas does not warn", layout: ctKymaLayout(), w: scaling.Workload{Config: ctRange(1, 5)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs, got := scaling.Validate(tc.w, tc.layout, ctSources())
			if len(errs) != 0 {
				t.Fatalf("Validate errors: %v", errs)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Validate warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func ctW1(replicas int32, c *scaling.Config) scaling.Workload {
	return scaling.Workload{Replicas: ctI32(replicas), Config: c}
}

func ctWithMetrics(c *scaling.Config) *scaling.Config {
	c.Metrics = []autoscalingv2.MetricSpec{ctCPU(50)}
	return c
}

func ctWithTrigger(c *scaling.Config) *scaling.Config {
	c.Triggers = []scaling.Trigger{ctTrigger("rps", `sum(rate(http_requests_total{namespace="${namespace}"}[1m]))`, 10)}
	return c
}

func ctDefaultMetricsLayout() scaling.Layout {
	l := ctLayout()
	l.HasDefaultMetrics = true
	return l
}

func BenchmarkValidate(b *testing.B) {
	w := ctFull()
	trig := ctFullTriggers()
	l := ctLayout()
	sources := ctSources()
	b.ReportAllocs()
	// One op validates both variants of the full config, since V6 forbids
	// metrics and triggers in one object.
	for b.Loop() {
		if errs, _ := scaling.Validate(w, l, sources); len(errs) != 0 {
			b.Fatal(errs)
		}
		if errs, _ := scaling.Validate(trig, l, sources); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}
