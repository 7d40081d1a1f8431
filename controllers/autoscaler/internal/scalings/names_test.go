package scalings

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
)

// Fingerprints' significant key ignores the soft values and the full key
// does not; neither sees a condition's transition time alone, and the
// status given is left as it was.
func TestFingerprintsTellSoftFromSignificantChanges(t *testing.T) {
	at := metav1.NewMicroTime(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	three := int32(3)
	base := func() v1alpha1.ScalingStatus {
		return v1alpha1.ScalingStatus{
			Target: "RackedCluster/cart", Mode: v1alpha1.ScalingModeTriggers, Replicas: &three,
			Conditions: []metav1.Condition{{Type: v1alpha1.ScalingActive, Status: metav1.ConditionTrue, Reason: "Triggers", LastTransitionTime: metav1.NewTime(at.Time)}},
			Triggers:   []v1alpha1.TriggerStatus{{Name: "rps", Value: "10", Failures: 0}},
			History: &v1alpha1.ScalingHistory{
				Recommendations: []v1alpha1.ScalingRecommendation{{Time: at, Replicas: 3}},
				LastActive:      &at,
				Failures:        map[string]int32{"rps": 0},
			},
		}
	}
	later := metav1.NewMicroTime(at.Add(time.Minute))
	cases := []struct {
		name                 string
		change               func(*v1alpha1.ScalingStatus)
		significant, changed bool
	}{
		{"nothing", func(*v1alpha1.ScalingStatus) {}, false, false},
		{"a trigger's value", func(s *v1alpha1.ScalingStatus) { s.Triggers[0].Value = "11" }, false, true},
		{"a trigger's failures", func(s *v1alpha1.ScalingStatus) { s.Triggers[0].Failures = 2 }, false, true},
		{"the newest recommendation's time", func(s *v1alpha1.ScalingStatus) { s.History.Recommendations[0].Time = later }, false, true},
		{"last active", func(s *v1alpha1.ScalingStatus) { s.History.LastActive = &later }, false, true},
		{"the history's failures", func(s *v1alpha1.ScalingStatus) { s.History.Failures = map[string]int32{"rps": 1} }, false, true},
		{"a condition's transition time alone", func(s *v1alpha1.ScalingStatus) { s.Conditions[0].LastTransitionTime = metav1.NewTime(later.Time) }, false, false},
		{"the count", func(s *v1alpha1.ScalingStatus) { four := int32(4); s.Replicas = &four }, true, true},
		{"a trigger's health", func(s *v1alpha1.ScalingStatus) { s.Triggers[0].Health = "Failing" }, true, true},
		{"a recommendation's count", func(s *v1alpha1.ScalingStatus) { s.History.Recommendations[0].Replicas = 5 }, true, true},
	}
	sig0, full0 := Fingerprints(base())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.change(&s)
			kept := *s.DeepCopy()
			sig, full := Fingerprints(s)
			got := []bool{sig != sig0, full != full0}
			if diff := cmp.Diff([]bool{tc.significant, tc.changed}, got); diff != "" {
				t.Errorf("significant, full changed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(kept, s); diff != "" {
				t.Errorf("Fingerprints changed the status (-before +after):\n%s", diff)
			}
		})
	}
}
