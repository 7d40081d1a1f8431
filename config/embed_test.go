package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSampleCRDs: the binary carries the three sample CRDs of
// config/samples/crd, and nothing else of the folder.
func TestSampleCRDs(t *testing.T) {
	crds, err := SampleCRDs()
	if err != nil {
		t.Fatalf("SampleCRDs: %v", err)
	}
	var names []string
	for _, crd := range crds {
		names = append(names, crd.Name)
	}
	want := []string{"functions.samples.scaleplane.io", "rackedclusters.samples.scaleplane.io", "workergroups.samples.scaleplane.io"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("SampleCRDs (-want +got):\n%s", diff)
	}
}

// TestScaleplaneCRDs: the binary carries scaleplane's own CRDs, so that
// scaleplane dev and the e2e control plane serve Scalings, ScaleProfiles and ScaleHandles
// (kubectl apply of a profile works there as in a cluster).
func TestScaleplaneCRDs(t *testing.T) {
	crds, err := ScaleplaneCRDs()
	if err != nil {
		t.Fatalf("ScaleplaneCRDs: %v", err)
	}
	var names []string
	for _, crd := range crds {
		names = append(names, crd.Name)
	}
	want := []string{"scalehandles.scaleplane.io", "scaleprofiles.scaleplane.io", "scalings.scaleplane.io"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("ScaleplaneCRDs (-want +got):\n%s", diff)
	}
}
