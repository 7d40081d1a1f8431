package scaling_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/scaling"
)

func TestDecodeConfigJSON(t *testing.T) {
	const key = "metadata.annotations[scaleplane.io/scale-config]"
	path := field.NewPath("metadata", "annotations").Key("scaleplane.io/scale-config")
	cpu := ctCPU(70)
	cases := []struct {
		name     string
		data     string
		want     *scaling.Config
		wantErrs []ctErr
	}{
		{name: "V9 valid min and max", data: `{"minReplicas":1,"maxReplicas":5}`, want: ctRange(1, 5)},
		{name: "V9 valid with metrics and surrounding space",
			data: ` {"maxReplicas":4,"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":70}}}]} `,
			want: &scaling.Config{MaxReplicas: ctI32(4), Metrics: []autoscalingv2.MetricSpec{cpu}}},
		{name: "V9 valid empty object", data: `{}`, want: &scaling.Config{}},
		{name: "V9 null is no config", data: `null`},
		{name: "V9 unknown field", data: `{"minReplicas":1,"maxReplica":5}`,
			wantErrs: []ctErr{ctInvalid(key, "maxReplica")}},
		{name: "V9 unknown nested field carries its JSON path", data: `{"metrics":[{"type":"Resource","resource":{"nam":"cpu"}}]}`,
			wantErrs: []ctErr{ctInvalid(key, "metrics[0].resource.nam")}},
		{name: "V9 field names are case-sensitive", data: `{"MinReplicas":1}`,
			wantErrs: []ctErr{ctInvalid(key, "MinReplicas")}},
		{name: "V9 every unknown field together", data: `{"foo":1,"idle":{"timeout":3},"triggers":[{"name":"a","treshold":1}]}`,
			wantErrs: []ctErr{ctInvalid(key, "foo"), ctInvalid(key, "idle.timeout"), ctInvalid(key, "triggers[0].treshold")}},
		{name: "V9 duplicate field", data: `{"minReplicas":1,"minReplicas":2}`,
			wantErrs: []ctErr{ctInvalid(key, "minReplicas")}},
		{name: "V9 wrong type", data: `{"minReplicas":"two"}`,
			wantErrs: []ctErr{ctInvalid(key, "minReplicas")}},
		{name: "V9 wrong nested type", data: `{"schedule":{"wakeUp":"07:00"}}`,
			wantErrs: []ctErr{ctInvalid(key, "schedule.wakeUp")}},
		{name: "V9 wrong type inside a list carries the index",
			data:     `{"metrics":[{},{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":"70%"}}}]}`,
			wantErrs: []ctErr{ctInvalid(key, "metrics[1].resource.target.averageUtilization")}},
		{name: "V9 wrong type in a map value", data: `{"triggers":[{"name":"a","metadata":{"x":"y","z":3}}]}`,
			wantErrs: []ctErr{ctInvalid(key, "triggers[0].metadata.z")}},
		{name: "V9 integer out of range", data: `{"minReplicas":99999999999}`,
			wantErrs: []ctErr{ctInvalid(key, "minReplicas")}},
		{name: "V9 fractional replicas", data: `{"maxReplicas":2.5}`,
			wantErrs: []ctErr{ctInvalid(key, "maxReplicas")}},
		{name: "V9 bad quantity", data: `{"metrics":[{"type":"Pods","pods":{"metric":{"name":"rps"},"target":{"type":"AverageValue","averageValue":"lots"}}}]}`,
			wantErrs: []ctErr{ctInvalid(key, `{"metrics":[{"type":"Pods","pods":{"metric":{"name":"rps"},"targ...`)}},
		{name: "V9 syntax error", data: `{"minReplicas":1,`,
			wantErrs: []ctErr{ctInvalid(key, `{"minReplicas":1,`)}},
		{name: "V9 trailing data", data: `{"minReplicas":1} {}`,
			wantErrs: []ctErr{ctInvalid(key, `{"minReplicas":1} {}`)}},
		{name: "V9 not an object", data: `[1,2]`,
			wantErrs: []ctErr{ctInvalid(key, `[1,2]`)}},
		{name: "V9 empty annotation", data: ``,
			wantErrs: []ctErr{ctInvalid(key, ``)}},
		{name: "V9 YAML is not JSON", data: "minReplicas: 1",
			wantErrs: []ctErr{ctInvalid(key, "minReplicas: 1")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := scaling.DecodeConfigJSON([]byte(tc.data), path)
			if diff := cmp.Diff(tc.wantErrs, ctErrs(errs), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("DecodeConfigJSON errors (-want +got):\n%s\nfull: %v", diff, errs)
			}
			ctCheckDetails(t, errs)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("DecodeConfigJSON config (-want +got):\n%s", diff)
			}
		})
	}
}
