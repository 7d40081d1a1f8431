package webhooks

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
)

// TestNoWebhookOnBuiltInKinds: a profile of apps/v1 Deployments gets no
// entry in the configurations scaleplane writes or expects in GitOps mode;
// the sample kinds beside it keep theirs.
func TestNoWebhookOnBuiltInKinds(t *testing.T) {
	deployments, err := profile.Compile(v1alpha1.ScaleProfileSpec{
		Target:      v1alpha1.TargetKind{APIVersion: "apps/v1", Kind: "Deployment", Resource: "deployments"},
		ScaleConfig: v1alpha1.ScaleConfigLocation{Annotation: "scaleplane.io/scale-config"},
	})
	if err != nil {
		t.Fatal(err)
	}
	views := append([]*profile.Compiled{deployments}, sampleViews(t)...)
	m, v := Configurations(views, ConfigurationOptions{}, urlConfig)
	wantM, wantV := Configurations(sampleViews(t), ConfigurationOptions{}, urlConfig)
	if diff := cmp.Diff(summarize(wantM.Webhooks), summarize(m.Webhooks)); diff != "" {
		t.Errorf("mutating entries (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(summarize(wantV.Webhooks), summarize(v.Webhooks)); diff != "" {
		t.Errorf("validating entries (-want +got):\n%s", diff)
	}
	missing, err := MissingDispatchEntries(context.Background(), fakeClient(t), views, ConfigurationOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := missing[deployments.GVR()]; ok || len(missing) != len(sampleViews(t)) {
		t.Errorf("missing entries %v: want the sample kinds' only", missing)
	}
}
