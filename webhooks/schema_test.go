package webhooks

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scaleplane/scaleplane/config"
	"github.com/scaleplane/scaleplane/profile"
)

// limitedRackView is the RackedCluster profile against its CRD with
// a third-party kind's limits: the scale config's bounds have a minimum of 1.
func limitedRackView(t *testing.T) *profile.Compiled {
	t.Helper()
	crds, err := config.SampleCRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if crd.Spec.Names.Kind != rackedCluster {
			continue
		}
		one := float64(1)
		spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		cfg := spec.Properties["scaleConfig"]
		for _, b := range []string{"minReplicas", "maxReplicas"} {
			p := cfg.Properties[b]
			p.Minimum = &one
			cfg.Properties[b] = p
		}
		spec.Properties["scaleConfig"] = cfg
		crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
		v, err := testViews(t)[rackedCluster].WithCRD(crd)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	t.Fatal("no RackedCluster CRD")
	return nil
}

// M7 through the mutating webhook: replicas 0 fans out to the racks but
// writes no pin below the schema's minimum, and the response says why.
func TestM7MutateLeavesOutWhatTheSchemaRefuses(t *testing.T) {
	v := limitedRackView(t)
	resp := NewMutator(v).Handle(context.Background(), create(v, makeObj(rackedCluster, "db").replicas(0).groups("a", 2)))
	if !resp.Allowed {
		t.Fatalf("refused: %+v", resp.Result)
	}
	want := []jsonpatch.JsonPatchOperation{{Operation: "replace", Path: "/spec/racks/0/members", Value: num("0")}}
	if diff := cmp.Diff(want, resp.Patches); diff != "" {
		t.Errorf("patch (-want +got):\n%s", diff)
	}
	if len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "spec.scaleConfig not pinned to 0 (M1): spec.scaleConfig.minReplicas: the CRD's schema requires a value of at least 1 (minimum)") {
		t.Errorf("warnings = %q", resp.Warnings)
	}
}

// S2 through the /scale webhook: scaling a pinned object to a count whose
// pin the schema refuses is one 422 naming the limit.
func TestS2ScaleWebhookRefusesWhatTheFanOutCannotWrite(t *testing.T) {
	v := limitedRackView(t)
	pinned := parents(makeObj(rackedCluster, "db").replicas(3).config(obj{"minReplicas": 3, "maxReplicas": 3}).groups("a", 3))
	resp := NewScaleValidator(v, pinned, nil).Handle(context.Background(), scaleRequest(v, "db", 3, 0, "100"))
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity {
		t.Fatalf("want a 422, got allowed=%v %+v", resp.Allowed, resp.Result)
	}
	want := []metav1.StatusCause{{Type: invalidValue, Field: "spec.replicas", Message: "Invalid value: 0: scaling to 0 needs spec.scaleConfig.minReplicas := 0, but the CRD's schema requires a value of at least 1 (minimum); spec.scaleConfig.maxReplicas := 0, but the CRD's schema requires a value of at least 1 (minimum); scale to a count from 1 to 1000"}}
	if diff := cmp.Diff(want, resp.Result.Details.Causes); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
	if resp := NewScaleValidator(v, pinned, nil).Handle(context.Background(), scaleRequest(v, "db", 3, 2, "100")); !resp.Allowed {
		t.Errorf("scale to 2 refused: %+v", resp.Result)
	}
}
