package autoscaler

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/promql"
)

// A ScaleHandle's triggers read its target's pods: the scraper selects
// them by the handle's spec.pods labels with ${name} the target's name
// (every rack's pods: no group label), and labels the samples with the
// handle's name, so ${name} in a query is the handle's.
func TestScrapeWorkloadsOfAScaleHandleAreItsTargetsPods(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	store := promql.NewStore(promql.Options{Now: func() time.Time { return now }})
	v, err := profile.Compile(profile.ScaleHandleProfile())
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{Views: []*profile.Compiled{v}, Sources: testSources(t, promql.NewEvaluator(store, promql.EvaluatorOptions{Now: func() time.Time { return now }})), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	k := a.byResource["scalehandles"]
	handle := &unstructured.Unstructured{Object: map[string]interface{}{
		"spec": map[string]interface{}{
			"targetRef": map[string]interface{}{"name": "db"},
			"pods":      map[string]interface{}{"labels": map[string]interface{}{"scylla/cluster": "${name}"}, "memberGroupLabel": "scylla/rack"},
		},
	}}
	add := func(name string, labels map[string]string) {
		st := k.get(types.NamespacedName{Namespace: "shop", Name: name})
		k.ensureScalers(context.Background(), st, cfg(1, 5).trigger("rps", 1).obj())
		st.podLabels = labels
		st.publish(StateAutoscaling, "", 0, nil)
	}
	add("db-handle", k.podLabelsOf(handle))
	// A handle without pod labels is not scraped: its selector would
	// match every pod of the namespace.
	add("no-pods", k.podLabelsOf(&unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{"targetRef": map[string]interface{}{"name": "x"}}}}))

	type target struct {
		Namespace, Selector string
		Labels              map[string]string
	}
	var got []target
	for _, w := range a.ScrapeWorkloads() {
		got = append(got, target{w.Namespace, w.Selector.String(), w.Labels})
	}
	want := []target{{"shop", k8slabels.SelectorFromSet(k8slabels.Set{"scylla/cluster": "db"}).String(),
		map[string]string{"job": "db-handle", "workload": "db-handle", "workload_kind": "ScaleHandle"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scrape workloads (-want +got):\n%s", diff)
	}
}
