package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/scaleplane/scaleplane/profile"
)

func withGeneration(u *unstructured.Unstructured, g int64) *unstructured.Unstructured {
	u.SetGeneration(g)
	return u
}

func TestPlanStatus(t *testing.T) {
	const sel = "samples.scaleplane.io/cluster=demo,samples.scaleplane.io/rack=a"
	head := func(kind, name string) map[string]interface{} {
		return map[string]interface{}{
			"apiVersion": "samples.scaleplane.io/v1alpha1",
			"kind":       kind,
			"metadata":   map[string]interface{}{"name": name, "namespace": "ns"},
		}
	}
	withStatus := func(m map[string]interface{}, status map[string]interface{}) map[string]interface{} {
		m["status"] = status
		return m
	}
	tests := []struct {
		name string
		kind string
		// observedGeneration names the groups' observed generation field
		// in the profile, for kinds that report one.
		observedGeneration string
		in                 *unstructured.Unstructured
		wantApply          map[string]interface{}
		wantChanged        bool
		wantNote           string
	}{{
		name:        "C2 every rack agrees: replicas set, C3 selector picks one rack",
		kind:        "RackedCluster",
		in:          rc("demo").replicas(3).rack("a", 3).rack("b", 3).ready("a", 3).ready("b", 3).obj(),
		wantApply:   withStatus(head("RackedCluster", "demo"), map[string]interface{}{"replicas": int64(3), "selector": sel}),
		wantChanged: true,
		wantNote:    `status.replicas unset -> 3 (every group reports 3 ready); status.selector "` + sel + `"`,
	}, {
		name: "C2 racks disagree: the current replicas is kept, nothing to write",
		kind: "RackedCluster",
		in: rc("demo").replicas(3).rack("a", 3).rack("b", 3).rack("c", 3).
			ready("a", 3).ready("b", 3).ready("c", 2).status("replicas", int64(2)).status("selector", sel).obj(),
		wantApply: withStatus(head("RackedCluster", "demo"), map[string]interface{}{"replicas": int64(2), "selector": sel}),
	}, {
		name: "C2 a rack reports nothing: replicas stays absent",
		kind: "RackedCluster",
		in:   rc("demo").rack("a", 3).rack("b", 3).ready("a", 3).status("selector", sel).obj(),
		wantApply: withStatus(head("RackedCluster", "demo"),
			map[string]interface{}{"selector": sel}),
	}, {
		name: "C2 the count changed",
		kind: "RackedCluster",
		in: rc("demo").rack("a", 3).ready("a", 4).
			status("replicas", int64(3)).status("selector", "samples.scaleplane.io/cluster=demo,samples.scaleplane.io/rack=a").obj(),
		wantApply:   withStatus(head("RackedCluster", "demo"), map[string]interface{}{"replicas": int64(4), "selector": sel}),
		wantChanged: true,
		wantNote:    "status.replicas 3 -> 4 (every group reports 4 ready)",
	}, {
		name:        "kind without groups: only the selector, at the profile's path",
		kind:        "Function",
		in:          fn("hello").status("replicas", int64(2)).obj(),
		wantApply:   withStatus(head("Function", "hello"), map[string]interface{}{"replicas": int64(2), "podSelector": "samples.scaleplane.io/function=hello"}),
		wantChanged: true,
		wantNote:    `status.podSelector "samples.scaleplane.io/function=hello"`,
	}, {
		name:               "C2 a rack has not observed the latest generation: unchanged",
		kind:               "RackedCluster",
		observedGeneration: "observedGeneration",
		in: withGeneration(rc("demo").rack("a", 3).rack("b", 3).
			readyAt("a", 3, 2).readyAt("b", 3, 1).status("replicas", int64(2)).status("selector", sel).obj(), 2),
		wantApply: withStatus(head("RackedCluster", "demo"), map[string]interface{}{"replicas": int64(2), "selector": sel}),
	}, {
		name:               "C2 every rack caught up",
		kind:               "RackedCluster",
		observedGeneration: "observedGeneration",
		in: withGeneration(rc("demo").rack("a", 3).rack("b", 3).
			readyAt("a", 3, 2).readyAt("b", 3, 2).status("replicas", int64(2)).status("selector", sel).obj(), 2),
		wantApply:   withStatus(head("RackedCluster", "demo"), map[string]interface{}{"replicas": int64(3), "selector": sel}),
		wantChanged: true,
		wantNote:    "status.replicas 2 -> 3 (every group reports 3 ready)",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := sampleView(t, tt.kind)
			if tt.observedGeneration != "" {
				p := v.Spec()
				p.MemberGroups.Status.ObservedGenerationField = tt.observedGeneration
				var err error
				if v, err = profile.Compile(p); err != nil {
					t.Fatal(err)
				}
			}
			w, errs := v.Read(tt.in)
			if len(errs) > 0 {
				t.Fatalf("read: %v", errs)
			}
			got, err := planStatus(v, tt.in, w)
			if err != nil {
				t.Fatalf("planStatus: %v", err)
			}
			if diff := cmp.Diff(tt.wantApply, got.apply.Object); diff != "" {
				t.Errorf("apply (-want +got):\n%s", diff)
			}
			if got.changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", got.changed, tt.wantChanged)
			}
			if diff := cmp.Diff(tt.wantNote, got.note); diff != "" {
				t.Errorf("note (-want +got):\n%s", diff)
			}
		})
	}
}
