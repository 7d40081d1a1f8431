package profile

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/scaling"
)

// TestEmbeddedAutoscalingReads: a workload whose spec embeds
// api/v1alpha1's TriggerAutoscaling (as an operator's Go type would) is
// read by the one decoder into the scale config its fields say, thresholds
// written as quantities included.
func TestEmbeddedAutoscalingReads(t *testing.T) {
	in := v1alpha1.TriggerAutoscaling{
		Autoscaling: v1alpha1.Autoscaling{
			MinReplicas: ptr(int32(0)),
			MaxReplicas: ptr(int32(6)),
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(30))},
			},
		},
		Triggers: []v1alpha1.Trigger{{
			Name: "rps", Type: "AverageValue", Query: `sum(rate(http_requests_total{namespace="${namespace}"}[1m]))`,
			Threshold: resource.MustParse("500m"), ActivationThreshold: ptr(resource.MustParse("2")),
		}, {
			Name: "office-hours", Type: "AverageValue", Source: "cron", Threshold: resource.MustParse("3"),
			Metadata: map[string]string{"start": "0 8 * * *", "end": "0 18 * * *", "desiredReplicas": "3"},
		}},
		Idle:      &v1alpha1.Idle{TimeoutSeconds: ptr(int32(300))},
		Schedule:  &v1alpha1.Schedule{TimeZone: "Europe/Paris", WakeUp: []string{"07:30"}, ScaleDownTimeout: []v1alpha1.ScaleDownTimeout{{Time: "20:00", Seconds: 60}}},
		DependsOn: []string{"db"},
	}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]interface{}
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": SampleAPIVersion, "kind": "RackedCluster",
		"metadata": map[string]interface{}{"name": "web", "namespace": "shop"},
		"spec":     map[string]interface{}{"replicas": int64(1), "scaleConfig": spec},
	}}
	w, errs := mustCompile(t, sample("RackedCluster")).Read(u)
	if len(errs) > 0 {
		t.Fatalf("read: %v", errs)
	}
	want := &scaling.Config{
		MinReplicas: ptr(int32(0)), MaxReplicas: ptr(int32(6)),
		Behavior: in.Behavior,
		Triggers: []scaling.Trigger{{
			Name: "rps", Type: scaling.TargetAverageValue, Query: in.Triggers[0].Query, Threshold: 0.5, ActivationThreshold: ptr(2.0),
		}, {
			Name: "office-hours", Type: scaling.TargetAverageValue, Source: "cron", Threshold: 3, Metadata: in.Triggers[1].Metadata,
		}},
		Idle:      &scaling.Idle{TimeoutSeconds: ptr(int32(300))},
		Schedule:  &scaling.Schedule{TimeZone: "Europe/Paris", WakeUp: []string{"07:30"}, ScaleDownTimeout: []scaling.ScaleDownTimeout{{Time: "20:00", Seconds: 60}}},
		DependsOn: []string{"db"},
	}
	if diff := cmp.Diff(want, w.Config); diff != "" {
		t.Errorf("config read from the embedded type (-want +got):\n%s", diff)
	}
}

// TestAutoscalingHoldsOnlyTheHPAMode: Autoscaling alone is the HPA mode
// (the range, metrics and behavior); the trigger autoscaler's fields
// belong to TriggerAutoscaling. That scaling.Config has the fields of
// TriggerAutoscaling is not a test's business: it is generated from it
// (hack/configgen).
func TestAutoscalingHoldsOnlyTheHPAMode(t *testing.T) {
	hpa := jsonFields(reflect.TypeFor[v1alpha1.Autoscaling](), "")
	if diff := cmp.Diff([]string{"behavior", "maxReplicas", "metrics", "minReplicas"}, hpa); diff != "" {
		t.Errorf("JSON fields of Autoscaling (-want +got):\n%s", diff)
	}
}

// jsonFields lists the JSON paths of t's fields, following structs, slices
// and pointers, but not into autoscaling/v2's types.
func jsonFields(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.PkgPath() == "k8s.io/api/autoscaling/v2" || t == reflect.TypeFor[resource.Quantity]() {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && strings.Contains(opts, "inline") {
			out = append(out, jsonFields(f.Type, prefix)...)
			continue
		}
		path := prefix + name
		out = append(out, path)
		out = append(out, jsonFields(f.Type, path+".")...)
	}
	slices.Sort(out)
	return out
}
