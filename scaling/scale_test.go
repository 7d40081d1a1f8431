package scaling_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/scaleplane/scaleplane/scaling"
)

var s1Names = scaling.ScaleNames{Config: "spec.scaleConfig", Min: "spec.scaleConfig.minReplicas", Max: "spec.scaleConfig.maxReplicas"}

// S1: the /scale range check, decided from values alone.
func TestS1CheckScale(t *testing.T) {
	parent := func(r int32, c *scaling.Config) *scaling.Workload {
		return &scaling.Workload{Replicas: ctI32(r), Config: c}
	}
	tests := []struct {
		name   string
		layout scaling.Layout
		in     scaling.ScaleRequest
		// want is the refusal's message on spec.replicas, "" to allow.
		want string
		// wantParent is ScaleNeedsParent's answer.
		wantParent bool
	}{
		{name: "inside the range", layout: ctLayout(),
			in: scaling.ScaleRequest{Replicas: 6, OldReplicas: ctI32(3), Parent: parent(3, ctRange(2, 6))}, wantParent: true},
		{name: "above the range names the bound to raise", layout: ctLayout(),
			in:         scaling.ScaleRequest{Replicas: 9, OldReplicas: ctI32(3), Parent: parent(3, ctRange(2, 6))},
			want:       "spec.replicas: Invalid value: 9: outside the autoscaling range [2, 6] of spec.scaleConfig; raise spec.scaleConfig.maxReplicas to 9 or more, or pin the config (minReplicas = maxReplicas) to scale by hand",
			wantParent: true},
		{name: "below the range names the bound to lower", layout: ctLayout(),
			in:         scaling.ScaleRequest{Replicas: 1, OldReplicas: ctI32(3), Parent: parent(3, ctRange(2, 6))},
			want:       "spec.replicas: Invalid value: 1: outside the autoscaling range [2, 6] of spec.scaleConfig; lower spec.scaleConfig.minReplicas to 1 or less, or pin the config (minReplicas = maxReplicas) to scale by hand",
			wantParent: true},
		{name: "a missing minReplicas counts as 1 (M2)", layout: ctLayout(),
			in:         scaling.ScaleRequest{Replicas: 0, Parent: parent(2, &scaling.Config{MaxReplicas: ctI32(4)})},
			want:       "spec.replicas: Invalid value: 0: outside the autoscaling range [1, 4] of spec.scaleConfig; lower spec.scaleConfig.minReplicas to 0 or less and add triggers or idle settings, or pin the config (minReplicas = maxReplicas) to scale by hand",
			wantParent: true},
		{name: "negative replicas, without the parent", layout: ctLayout(),
			in:   scaling.ScaleRequest{Replicas: -1},
			want: "spec.replicas: Invalid value: -1: must be greater than or equal to 0"},
		{name: "above the profile's bound (V1), without the parent", layout: ctLayout(),
			in:   scaling.ScaleRequest{Replicas: 101, OldReplicas: ctI32(3)},
			want: "spec.replicas: Invalid value: 101: must be less than or equal to 100, the upper bound this kind's profile allows; scale to 100 or less, or raise the profile's maxReplicas"},
		{name: "the same count again is allowed, even outside the range", layout: ctLayout(),
			in: scaling.ScaleRequest{Replicas: 9, OldReplicas: ctI32(9), Parent: parent(9, ctRange(2, 6))}},
		{name: "a pinned config follows the count (C1)", layout: ctLayout(),
			in: scaling.ScaleRequest{Replicas: 9, OldReplicas: ctI32(3), Parent: parent(3, ctRange(3, 3))}, wantParent: true},
		{name: "no config", layout: ctLayout(),
			in: scaling.ScaleRequest{Replicas: 9, OldReplicas: ctI32(3), Parent: parent(3, nil)}, wantParent: true},
		{name: "parent not found", layout: ctLayout(),
			in: scaling.ScaleRequest{Replicas: 9, OldReplicas: ctI32(3)}, wantParent: true},
		{name: "HPA on a child: external scaling, not held to the range (W2)", layout: ctKymaLayout(),
			in: scaling.ScaleRequest{Replicas: 9, OldReplicas: ctI32(3), Parent: parent(3, ctRange(2, 6))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := scaling.ScaleNeedsParent(tc.in, tc.layout); got != tc.wantParent {
				t.Errorf("ScaleNeedsParent = %v, want %v", got, tc.wantParent)
			}
			got := ""
			if err := scaling.CheckScale(tc.in, tc.layout, s1Names); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CheckScale (-want +got):\n%s", diff)
			}
		})
	}
}
