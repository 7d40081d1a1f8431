package profile

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/scaling"
)

// TestV9DecodeConfigJSON: a config held in an annotation is strict JSON of
// the Config schema, decoded by the one decoder every config goes through;
// every problem is reported at its own path, all together.
func TestV9DecodeConfigJSON(t *testing.T) {
	const ann = "metadata.annotations[scaleplane.io/scale-config]"
	path := field.NewPath("metadata", "annotations").Key("scaleplane.io/scale-config")
	i32 := func(n int32) *int32 { return &n }
	cpu := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: "cpu", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: i32(70)}}}
	type fieldErr struct{ Field, Type string }
	invalid := func(sub string) fieldErr { return fieldErr{ann + sub, string(field.ErrorTypeInvalid)} }
	tests := []struct {
		name string
		data string
		want *scaling.Config
		errs []fieldErr
	}{
		{name: "valid min and max", data: `{"minReplicas":1,"maxReplicas":5}`, want: &scaling.Config{MinReplicas: i32(1), MaxReplicas: i32(5)}},
		{name: "valid with metrics and JSON whitespace around",
			data: " \t\r\n{\"maxReplicas\":4,\"metrics\":[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\"target\":{\"type\":\"Utilization\",\"averageUtilization\":70}}}]}\n ",
			want: &scaling.Config{MaxReplicas: i32(4), Metrics: []autoscalingv2.MetricSpec{cpu}}},
		{name: "empty object", data: `{}`, want: &scaling.Config{}},
		{name: "null is no config", data: `null`},
		{name: "empty is no config", data: ``},
		{name: "JSON whitespace only is no config", data: " \n\t\r"},
		{name: "a duplicate key: the last wins, as in any object the API server decodes",
			data: `{"minReplicas":1,"minReplicas":2,"idle":{"replicasAtStart":2},"idle":{"timeoutSeconds":5}}`,
			want: &scaling.Config{MinReplicas: i32(2), Idle: &scaling.Idle{TimeoutSeconds: i32(5)}}},
		{name: "an integral number fills an integer field, as the API server's schema validation accepts it",
			data: `{"minReplicas":1.0,"maxReplicas":5e0}`, want: &scaling.Config{MinReplicas: i32(1), MaxReplicas: i32(5)}},
		{name: "unknown field", data: `{"minReplicas":1,"maxReplica":5}`, errs: []fieldErr{invalid(".maxReplica")}},
		{name: "unknown nested field", data: `{"metrics":[{"type":"Resource","resource":{"nam":"cpu"}}]}`,
			errs: []fieldErr{invalid(".metrics[0].resource.nam")}},
		{name: "field names are case-sensitive", data: `{"MinReplicas":1}`, errs: []fieldErr{invalid(".MinReplicas")}},
		{name: "every unknown field together", data: `{"foo":1,"idle":{"timeout":3},"triggers":[{"name":"a","treshold":1}]}`,
			errs: []fieldErr{invalid(".triggers[0].treshold"), invalid(".idle.timeout"), invalid(".foo")}},
		{name: "wrong type", data: `{"minReplicas":"two"}`, errs: []fieldErr{invalid(".minReplicas")}},
		{name: "wrong nested type", data: `{"schedule":{"wakeUp":"07:00"}}`, errs: []fieldErr{invalid(".schedule.wakeUp")}},
		{name: "wrong type inside a list carries the index",
			data: `{"metrics":[{},{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":"70%"}}}]}`,
			errs: []fieldErr{invalid(".metrics[1].resource.target.averageUtilization")}},
		{name: "wrong type in a map value", data: `{"triggers":[{"name":"a","metadata":{"x":"y","z":3}}]}`,
			errs: []fieldErr{invalid(".triggers[0].metadata[z]")}},
		{name: "integer out of range", data: `{"minReplicas":99999999999}`, errs: []fieldErr{invalid(".minReplicas")}},
		{name: "fractional replicas", data: `{"maxReplicas":2.5}`, errs: []fieldErr{invalid(".maxReplicas")}},
		{name: "bad quantity", data: `{"metrics":[{"type":"Pods","pods":{"metric":{"name":"rps"},"target":{"type":"AverageValue","averageValue":"lots"}}}]}`,
			errs: []fieldErr{invalid(".metrics[0].pods.target.averageValue")}},
		{name: "quantity with a huge exponent", data: `{"behavior":{"scaleUp":{"tolerance":"1e-999999999"}}}`,
			errs: []fieldErr{invalid(".behavior.scaleUp.tolerance")}},
		{name: "a number beyond float64", data: `{"triggers":[{"threshold":1e400}]}`, errs: []fieldErr{invalid("")}},
		{name: "syntax error", data: `{"minReplicas":1,`, errs: []fieldErr{invalid("")}},
		{name: "trailing data", data: `{"minReplicas":1} {}`, errs: []fieldErr{invalid("")}},
		{name: "not an object", data: `[1,2]`, errs: []fieldErr{invalid("")}},
		{name: "YAML is not JSON", data: "minReplicas: 1", errs: []fieldErr{invalid("")}},
		{name: "a leading no-break space", data: "\u00a0{}", errs: []fieldErr{invalid("")}},
		{name: "a trailing line separator", data: "{}\u2028", errs: []fieldErr{invalid("")}},
		{name: "a vertical tab", data: "\v{}", errs: []fieldErr{invalid("")}},
		{name: "a form feed", data: "{}\f", errs: []fieldErr{invalid("")}},
		{name: "a no-break space alone", data: "\u00a0", errs: []fieldErr{invalid("")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := DecodeConfigJSON([]byte(tt.data), path)
			var gotErrs []fieldErr
			for _, e := range errs {
				gotErrs = append(gotErrs, fieldErr{e.Field, string(e.Type)})
				if e.Detail == "" {
					t.Errorf("%s: no detail", e.Field)
				}
			}
			if diff := cmp.Diff(tt.errs, gotErrs, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s\nfull: %v", diff, errs)
			}
			if diff := cmp.Diff(tt.want, got, cmpOpts...); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}
