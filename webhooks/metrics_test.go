package webhooks

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
)

func TestMetrics(t *testing.T) {
	views := testViews(t)
	view := views[workerGroup]
	kind := kindLabel(view)
	count := func(role, op, result string) float64 {
		return testutil.ToFloat64(reviews.WithLabelValues(role, kind, op, result))
	}
	type counts struct{ Patched, Allowed, Denied, Errored, Warnings float64 }
	read := func() counts {
		return counts{
			Patched:  count(roleMutate, "CREATE", resultPatched),
			Allowed:  count(roleValidate, "CREATE", resultAllowed),
			Denied:   count(roleValidate, "CREATE", resultDenied),
			Errored:  count(roleValidate, "CREATE", resultErrored),
			Warnings: testutil.ToFloat64(warnings.WithLabelValues(roleValidate, kind)),
		}
	}
	before := read()

	ctx := context.Background()
	NewMutator(view).Handle(ctx, create(view, makeObj(workerGroup, "wg").replicas(2)))
	NewValidator(view, testSources()).Handle(ctx, create(view, makeObj(workerGroup, "wg").replicas(2)))
	NewValidator(view, testSources()).Handle(ctx, create(view, makeObj(workerGroup, "wg").replicas(9).config(obj{"minReplicas": 1, "maxReplicas": 3})))
	NewValidator(view, testSources()).Handle(ctx, create(view, makeObj(workerGroup, "wg").replicas(-1)))
	NewValidator(view, testSources()).Handle(ctx, request(view, admissionv1.Create, "wg", []byte("{"), nil))

	got := read()
	want := counts{
		Patched:  before.Patched + 1,
		Allowed:  before.Allowed + 2,
		Denied:   before.Denied + 1,
		Errored:  before.Errored + 1,
		Warnings: before.Warnings + 1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
}
