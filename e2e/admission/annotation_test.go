package admission

import (
	"strings"
	"testing"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
)

// TestAnnotatedConfigRefusedOnUpdate: `kubectl annotate` of a config that
// cannot be read, on an object that had none, is refused as the same
// annotation is on create (V9), with the field inside the annotation: the
// ratchet keeps only a config the object already had. A config with two
// problems reports both in the one refusal.
func TestAnnotatedConfigRefusedOnUpdate(t *testing.T) {
	ns := namespace(t)
	mustApply(t, manifest{kind: "ZonedDatabase", name: "plain", namespace: ns,
		spec: obj{"topology": obj{"replicasPerZone": 2, "zones": zones("eu-1", 2)}}})
	ann := "metadata.annotations[" + v1alpha1.AnnotationScaleConfig + "]"
	for _, tc := range []struct {
		value string
		want  []string
	}{
		{`{"minReplica":1,"maxReplicas":5}`, []string{ann + ".minReplica: Invalid value"}},
		{`min 1 max 5`, []string{ann + ": Invalid value"}},
		{`{"minReplicas":"1","maxReplicas":5}`, []string{ann + ".minReplicas: Invalid value"}},
		{`{"minReplicas":1,"maxReplicas":2000,"triggers":[{"name":"rps","type":"AverageValue","query":"sum(rate(http_requests_total[2m]))","threshold":"10s"}]}`,
			[]string{ann + ".triggers[0].threshold: Invalid value", ann + ".maxReplicas: Invalid value: 2000"}},
	} {
		out, err := kubectl(t, "annotate", "zoneddatabase", "plain", "-n", ns, v1alpha1.AnnotationScaleConfig+"="+tc.value)
		if err == nil {
			t.Errorf("kubectl annotate %s: accepted (%s), want a refusal", tc.value, strings.TrimSpace(out))
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("kubectl annotate %s: %v\nwant a refusal containing %q", tc.value, err, w)
			}
		}
	}
	if u := get(t, "ZonedDatabase", ns, "plain"); len(u.GetAnnotations()[v1alpha1.AnnotationScaleConfig]) > 0 {
		t.Errorf("annotation stored after refused updates: %q", u.GetAnnotations()[v1alpha1.AnnotationScaleConfig])
	}
}
