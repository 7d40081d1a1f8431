package scaling

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var annRoot = field.NewPath("metadata", "annotations")

// slimFaasRulesWant is SlimFaas's behavior in one direction as the
// translation writes it.
func slimFaasRulesWant(window int32, sel autoscalingv2.ScalingPolicySelect, policies ...autoscalingv2.HPAScalingPolicy) *autoscalingv2.HPAScalingRules {
	zero := resource.MustParse("0")
	return &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &window, SelectPolicy: &sel, Tolerance: &zero, Policies: policies}
}

var (
	percent100 = autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}
	pods4      = autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15}
	slimFaasB  = &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   slimFaasRulesWant(0, autoscalingv2.MaxChangePolicySelect, percent100, pods4),
		ScaleDown: slimFaasRulesWant(300, autoscalingv2.MinChangePolicySelect, percent100),
	}
)

// TestFromSlimFaas maps SlimFaas's annotations, with its defaults, to the
// scale config they mean (docs/slimfaas.md).
func TestFromSlimFaas(t *testing.T) {
	tests := []struct {
		name string
		ann  map[string]string
		want *Config
		errs []string
	}{{
		name: "no function",
		ann:  map[string]string{SlimFaasReplicasMin: "1"},
	}, {
		name: "function false",
		ann:  map[string]string{SlimFaasFunction: "False"},
	}, {
		name: "SlimFaas's defaults",
		ann:  map[string]string{SlimFaasFunction: "true"},
		want: &Config{MinReplicas: valuePtr(int32(0)), MaxReplicas: valuePtr(int32(1)),
			Idle: &Idle{ReplicasAtStart: valuePtr(int32(1)), TimeoutSeconds: valuePtr(int32(300))}},
	}, {
		name: "the documented function",
		ann: map[string]string{
			SlimFaasFunction:                          "True",
			SlimFaasReplicasMin:                       "0",
			SlimFaasReplicasAtStart:                   "2",
			SlimFaasTimeoutSecondBeforeSetReplicasMin: "60",
			SlimFaasDependsOn:                         "mysql, fibonacci2,",
			SlimFaasSchedule:                          `{"TimeZoneID":"Europe/Paris","Default":{"WakeUp":["07:00"],"ScaleDownTimeout":[{"Time":"07:00","Value":20},{"Time":"21:00","Value":10}]}}`,
			SlimFaasScale: `{"ReplicaMax": 5, "Triggers": [{"MetricType": "AverageValue", "MetricName": "rps",
				"Query": "sum(rate(http_server_requests_seconds_count{namespace=\"${namespace}\",job=\"${name}\"}[1m]))", "Threshold": 10}]}`,
		},
		want: &Config{MinReplicas: valuePtr(int32(0)), MaxReplicas: valuePtr(int32(5)),
			Idle:      &Idle{ReplicasAtStart: valuePtr(int32(2)), TimeoutSeconds: valuePtr(int32(60))},
			DependsOn: []string{"mysql", "fibonacci2"},
			Schedule: &Schedule{TimeZone: "Europe/Paris", WakeUp: []string{"07:00"},
				ScaleDownTimeout: []ScaleDownTimeout{{Time: "07:00", Seconds: 20}, {Time: "21:00", Seconds: 10}}},
			Triggers: []Trigger{{Name: "rps", Type: TargetAverageValue, Threshold: 10,
				Query: `sum(rate(http_server_requests_seconds_count{namespace="${namespace}",job="${name}"}[1m]))`}},
			Behavior: slimFaasB,
		},
	}, {
		name: "schedule defaults: time zone GB, time 00:00",
		ann:  map[string]string{SlimFaasFunction: "true", SlimFaasSchedule: `{"Default":{"ScaleDownTimeout":[{"Value":30}]}}`},
		want: &Config{MinReplicas: valuePtr(int32(0)), MaxReplicas: valuePtr(int32(1)),
			Idle:     &Idle{ReplicasAtStart: valuePtr(int32(1)), TimeoutSeconds: valuePtr(int32(300))},
			Schedule: &Schedule{TimeZone: "GB", ScaleDownTimeout: []ScaleDownTimeout{{Time: "00:00", Seconds: 30}}}},
	}, {
		name: "behavior given, unnamed and duplicate metrics, Value type",
		ann: map[string]string{SlimFaasFunction: "true", SlimFaasReplicasMin: "1", SlimFaasScale: `{"ReplicaMax": 10,
			"Triggers": [{"Query": "a", "Threshold": 1}, {"MetricType": "Value", "MetricName": "x", "Query": "b", "Threshold": 0.5}, {"MetricName": "x", "Query": "c", "Threshold": 2}],
			"Behavior": {"ScaleDown": {"Policies": [{"Type": "Pods", "Value": 1, "PeriodSeconds": 60}, {"Value": 50}]}}}`},
		want: &Config{MinReplicas: valuePtr(int32(1)), MaxReplicas: valuePtr(int32(10)),
			Idle: &Idle{ReplicasAtStart: valuePtr(int32(1)), TimeoutSeconds: valuePtr(int32(300))},
			Triggers: []Trigger{{Name: "trigger-0", Type: TargetAverageValue, Query: "a", Threshold: 1},
				{Name: "x", Type: TargetValue, Query: "b", Threshold: 0.5}, {Name: "trigger-2", Type: TargetAverageValue, Query: "c", Threshold: 2}},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: slimFaasRulesWant(0, autoscalingv2.MaxChangePolicySelect, percent100, pods4),
				ScaleDown: slimFaasRulesWant(0, autoscalingv2.MinChangePolicySelect,
					autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60},
					autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 15}),
			}},
	}, {
		name: "bad JSON, bad numbers, bad booleans are errors at their key",
		ann: map[string]string{SlimFaasFunction: "true", SlimFaasReplicasMin: "-1", SlimFaasTimeoutSecondBeforeSetReplicasMin: "5m",
			SlimFaasSchedule: `{"TimeZoneID": "Europe/Paris",`, SlimFaasScale: `{"ReplicaMax": 3, "Replicas": 2}`},
		errs: []string{
			"FieldValueInvalid metadata.annotations[SlimFaas/ReplicasMin]",
			"FieldValueInvalid metadata.annotations[SlimFaas/TimeoutSecondBeforeSetReplicasMin]",
			"FieldValueInvalid metadata.annotations[SlimFaas/Schedule]",
			"FieldValueInvalid metadata.annotations[SlimFaas/Scale]",
		},
	}, {
		name: "not a boolean",
		ann:  map[string]string{SlimFaasFunction: "yes"},
		errs: []string{"FieldValueInvalid metadata.annotations[SlimFaas/Function]"},
	}, {
		name: "triggers SlimFaas would skip are refused",
		ann: map[string]string{SlimFaasFunction: "true", SlimFaasReplicasAtStart: "0",
			SlimFaasScale: `{"ReplicaMax": 0, "Triggers": [{"Query": "", "Threshold": 1}, {"Query": "up", "Threshold": 0}, {"MetricType": "Total", "Query": "up", "Threshold": 1}]}`},
		errs: []string{
			"FieldValueInvalid metadata.annotations[SlimFaas/ReplicasAtStart]",
			"FieldValueInvalid metadata.annotations[SlimFaas/Scale]",
			"FieldValueInvalid metadata.annotations[SlimFaas/Scale]",
			"FieldValueInvalid metadata.annotations[SlimFaas/Scale]",
			"FieldValueInvalid metadata.annotations[SlimFaas/Scale]",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := FromSlimFaas(tt.ann, annRoot)
			var gotErrs []string
			for _, e := range errs {
				gotErrs = append(gotErrs, string(e.Type)+" "+e.Field)
			}
			if diff := cmp.Diff(tt.errs, gotErrs); diff != "" {
				t.Fatalf("errors (-want +got):\n%s\n%v", diff, errs)
			}
			if len(tt.errs) > 0 {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			if got != nil {
				w := Workload{Name: "fn", Replicas: valuePtr(int32(0)), Config: got}
				if errs, _ := Validate(w, Layout{ConfigInAnnotation: true}, testSources(t, nil)); len(errs) > 0 {
					t.Errorf("the translation breaks a rule: %v", errs)
				}
			}
		})
	}
}

// TestSlimFaasIgnored names every SlimFaas setting scaleplane does not act
// on, so that none is dropped in silence.
func TestSlimFaasIgnored(t *testing.T) {
	got := SlimFaasIgnored(map[string]string{
		SlimFaasFunction:                 "true",
		SlimFaasReplicasMin:              "0",
		"SlimFaas/NumberParallelRequest": "10",
		"SlimFaas/DefaultVisibility":     "Private",
		"SlimFaas/Colour":                "blue",
		SlimFaasScale:                    `{"ScrapeIntervalMilliseconds": 5000}`,
		"app.kubernetes.io/name":         "fn",
	})
	want := []string{
		"SlimFaas/Colour: not a SlimFaas setting scaleplane knows",
		"SlimFaas/DefaultVisibility: visibility is enforced by the SlimFaas gateway",
		"SlimFaas/NumberParallelRequest: parallel requests are limited by the SlimFaas gateway, not by an autoscaler",
		"SlimFaas/Scale.ScrapeIntervalMilliseconds: scaleplane scrapes every pod at the interval of its configuration (metrics.scrapeInterval), not per function",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
}

// TestSlimFaasDecisions: a workload configured by SlimFaas annotations
// decides as SlimFaas does where SlimFaas differs from an HPA: no
// tolerance (a 5% excess scales up, an HPA would hold), and scale-down by
// the most conservative policy (1 pod, where an HPA would take 50%).
func TestSlimFaasDecisions(t *testing.T) {
	cfg, errs := FromSlimFaas(map[string]string{SlimFaasFunction: "true", SlimFaasReplicasMin: "1", SlimFaasScale: `{"ReplicaMax": 20,
		"Triggers": [{"MetricName": "rps", "Query": "q", "Threshold": 10}],
		"Behavior": {"ScaleDown": {"StabilizationWindowSeconds": 0, "Policies": [{"Type": "Pods", "Value": 1, "PeriodSeconds": 15}, {"Type": "Percent", "Value": 50, "PeriodSeconds": 15}]}}}`}, annRoot)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	hpa := *cfg
	hpa.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: valuePtr(int32(0)), Policies: cfg.Behavior.ScaleDown.Policies}}
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	decide := func(c *Config, current int32, value float64) int32 {
		return Decide(DecideInput{Now: t0, Current: current, Config: c, Triggers: []TriggerResult{val("rps", value)}}, &History{}).Desired
	}
	type outcome struct{ SlimFaas, HPA int32 }
	got := map[string]outcome{
		"up 5% above the threshold": {decide(cfg, 10, 105), decide(&hpa, 10, 105)},
		"down to a third":           {decide(cfg, 9, 30), decide(&hpa, 9, 30)},
	}
	want := map[string]outcome{
		"up 5% above the threshold": {SlimFaas: 11, HPA: 10},
		"down to a third":           {SlimFaas: 8, HPA: 4},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("desired (-want +got):\n%s", diff)
	}
}

// TestSlimFaasTriggerNamesUnique: a trigger's generated name
// (trigger-<index>) never takes another trigger's MetricName, so SlimFaas
// triggers that SlimFaas accepts are not refused as duplicates (V3).
func TestSlimFaasTriggerNamesUnique(t *testing.T) {
	c, errs := FromSlimFaas(map[string]string{
		SlimFaasFunction: "true",
		SlimFaasScale: `{"ReplicaMax":3,"Triggers":[` +
			`{"MetricName":"trigger-1","Query":"q0","Threshold":1},` +
			`{"Query":"q1","Threshold":1},` +
			`{"MetricName":"trigger-1","Query":"q2","Threshold":1}]}`,
	}, annRoot)
	if len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
	seen := map[string]bool{}
	for _, tr := range c.Triggers {
		if seen[tr.Name] {
			t.Errorf("trigger name %q given twice: %+v", tr.Name, c.Triggers)
		}
		seen[tr.Name] = true
	}
}
