package autoscaler

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/scaleplane/scaleplane/scaling"
)

// TestUnadmittedConfigIsChecked: with no webhook to refuse it, a built-in
// kind's config is judged by the validating rules before the autoscaler
// acts on it; a kind with webhooks is not judged twice.
func TestUnadmittedConfigIsChecked(t *testing.T) {
	sources := scaling.NewSources()
	bad := scaling.Workload{Name: "web", Replicas: ptr(int32(2)), Config: cfg(4, 2).idle(1, 60).obj()}
	good := scaling.Workload{Name: "web", Replicas: ptr(int32(2)), Config: cfg(0, 2).idle(1, 60).obj()}
	type got struct{ Refused, Admitted, Good bool }
	g := got{
		Refused:  unadmittedProblems(false, bad, scaling.Layout{ConfigInAnnotation: true}, sources) != "",
		Admitted: unadmittedProblems(true, bad, scaling.Layout{}, sources) != "",
		Good:     unadmittedProblems(false, good, scaling.Layout{ConfigInAnnotation: true}, sources) != "",
	}
	if diff := cmp.Diff(got{Refused: true}, g); diff != "" {
		t.Errorf("problems found (-want +got):\n%s", diff)
	}
	if p := unadmittedProblems(false, bad, scaling.Layout{ConfigInAnnotation: true}, sources); !strings.Contains(p, "minReplicas") {
		t.Errorf("the problem does not name the field: %q", p)
	}
}

func TestSlimFaasIgnoredNote(t *testing.T) {
	got := []string{
		slimFaasIgnoredNote(map[string]string{"SlimFaas/Function": "true"}),
		slimFaasIgnoredNote(map[string]string{"SlimFaas/Function": "true", "SlimFaas/DefaultTrust": "Untrusted"}),
	}
	want := []string{"", "SlimFaas settings scaleplane does not act on: SlimFaas/DefaultTrust: trust is enforced by the SlimFaas gateway"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}
