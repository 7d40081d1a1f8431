package scalings

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/scaleplane/scaleplane/controllers"
)

// A workload's Scaling and its built-in HPA have one name
// (docs/controllers.md), however long its parts.
func TestScalingAndHPAShareTheirName(t *testing.T) {
	longGroup := strings.Repeat("g", 60) + "." + strings.Repeat("h", 60) + ".example.com"
	for _, tc := range []struct {
		workload string
		gk       schema.GroupKind
	}{
		{"web", schema.GroupKind{Group: "samples.scaleplane.io", Kind: "RackedCluster"}},
		{"web", schema.GroupKind{Kind: "Function"}},
		{strings.Repeat("x", 250), schema.GroupKind{Group: "samples.scaleplane.io", Kind: "RackedCluster"}},
		{strings.Repeat("w", 150), schema.GroupKind{Group: longGroup, Kind: "RackedCluster"}},
	} {
		if s, h := Name(tc.workload, tc.gk), controllers.HPAName(tc.workload, tc.gk); s != h {
			t.Errorf("%s %s: Scaling %q, HPA %q", tc.gk, tc.workload, s, h)
		}
	}
}
