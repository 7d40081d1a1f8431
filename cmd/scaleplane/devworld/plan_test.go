package devworld

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
)

var (
	racked = Kind{
		GVK:              schema.GroupVersionKind{Group: "samples.scaleplane.io", Version: "v1alpha1", Kind: "RackedCluster"},
		Shape:            ShapeRacks,
		Labels:           map[string]string{"samples.scaleplane.io/cluster": "${name}"},
		MemberGroupLabel: "samples.scaleplane.io/rack",
	}
	leaders = Kind{
		GVK:    schema.GroupVersionKind{Group: "samples.scaleplane.io", Version: "v1alpha1", Kind: "WorkerGroup"},
		Shape:  ShapeLeaders,
		Labels: map[string]string{"samples.scaleplane.io/workergroup": "${name}", "samples.scaleplane.io/role": "leader"},
	}
)

func names(p plan) []string {
	var out []string
	for _, pp := range p.Pods {
		out = append(out, pp.Name)
	}
	return out
}

// TestPlanPods: one pod per member of each rack (member i of
// every rack before member i+1 of any, so a cap leaves racks even), one
// per replica for the other shapes, the cap and bad names reported.
func TestPlanPods(t *testing.T) {
	for _, tc := range []struct {
		name     string
		kind     Kind
		groups   []group
		replicas int
		max      int
		want     []string
		wanted   int
		problems []string
	}{{
		name:   "racks",
		kind:   racked,
		groups: []group{{"a", 2}, {"b", 1}, {"c", 2}},
		max:    64,
		want:   []string{"web-a-0", "web-b-0", "web-c-0", "web-a-1", "web-c-1"},
		wanted: 5,
	}, {
		name:     "racks capped evenly",
		kind:     racked,
		groups:   []group{{"a", 3}, {"b", 3}},
		max:      4,
		want:     []string{"web-a-0", "web-b-0", "web-a-1", "web-b-1"},
		wanted:   6,
		problems: []string{"asks for 6 pods; dev runs at most 4 per workload, so 2 are not started and its status counts only the pods that run"},
	}, {
		name:   "rack names become pod name parts",
		kind:   racked,
		groups: []group{{"Zone_A", 1}},
		max:    64,
		want:   []string{"web-zone-a-0"},
		wanted: 1,
	}, {
		name:     "two racks, one pod name",
		kind:     racked,
		groups:   []group{{"a", 1}, {"A", 1}},
		max:      64,
		want:     []string{"web-a-0"},
		wanted:   2,
		problems: []string{`pod name "web-a-0": two groups map to it`},
	}, {
		name:   "no members, no pods",
		kind:   racked,
		groups: []group{{"a", 0}, {"b", 0}},
		max:    64,
		wanted: 0,
	}, {
		name:     "leaders",
		kind:     leaders,
		replicas: 3,
		max:      64,
		want:     []string{"web-0", "web-1", "web-2"},
		wanted:   3,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := planPods(tc.kind, "web", tc.groups, tc.replicas, tc.max)
			if diff := cmp.Diff(tc.want, names(got)); diff != "" {
				t.Errorf("pods (-want +got):\n%s", diff)
			}
			if got.Wanted != tc.wanted {
				t.Errorf("wanted %d, want %d", got.Wanted, tc.wanted)
			}
			if diff := cmp.Diff(tc.problems, got.Problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodLabels: pods carry the profile's labels with ${name}
// and ${group} replaced, the group label, and dev's mark; a value no label
// can hold leaves the pod out with the reason.
func TestPodLabels(t *testing.T) {
	p := planPods(racked, "web", []group{{"a", 1}}, 0, 64)
	want := map[string]string{
		"samples.scaleplane.io/cluster": "web",
		"samples.scaleplane.io/rack":    "a",
		LabelManagedBy:                  ManagedByValue,
	}
	if diff := cmp.Diff(want, p.Pods[0].Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	p = planPods(leaders, "web", nil, 1, 64)
	want = map[string]string{"samples.scaleplane.io/workergroup": "web", "samples.scaleplane.io/role": "leader", LabelManagedBy: ManagedByValue}
	if diff := cmp.Diff(want, p.Pods[0].Labels); diff != "" {
		t.Errorf("leader labels (-want +got):\n%s", diff)
	}
	long := "x123456789x123456789x123456789x123456789x123456789x123456789x123456789"
	p = planPods(leaders, long, nil, 1, 64)
	if len(p.Pods) != 0 || len(p.Problems) != 1 {
		t.Errorf("a name too long for a label value: pods %v, problems %q; want none and one problem", names(p), p.Problems)
	}
}

// TestRackStatus: status.racks lists every rack in spec order
// with its ready pods, and is written only when it differs.
func TestRackStatus(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	groups := []group{{"a", 2}, {"b", 2}}
	got, changed := rackStatus(u, groups, map[string]int{"a": 2})
	want := []any{
		map[string]any{"name": "a", "readyMembers": int64(2)},
		map[string]any{"name": "b", "readyMembers": int64(0)},
	}
	if diff := cmp.Diff(want, got); diff != "" || !changed {
		t.Errorf("status.racks (-want +got):\n%s\nchanged %v, want true", diff, changed)
	}
	_ = unstructured.SetNestedSlice(u.Object, want, "status", "racks")
	if _, changed := rackStatus(u, groups, map[string]int{"a": 2}); changed {
		t.Error("the same readiness was reported as a change")
	}
	if _, changed := rackStatus(u, groups, map[string]int{"a": 2, "b": 1}); !changed {
		t.Error("a rack's new ready pod was not reported as a change")
	}
}

// TestOnlyLoopbackAPIServer: the World refuses an API server
// that is not dev's own, on loopback.
func TestOnlyLoopbackAPIServer(t *testing.T) {
	for host, ok := range map[string]bool{
		"https://127.0.0.1:6443":  true,
		"https://[::1]:6443":      true,
		"https://localhost:6443":  true,
		"127.0.0.1:6443":          true,
		"https://10.0.0.1:6443":   false,
		"https://kubernetes:443":  false,
		"https://prod.example.io": false,
	} {
		if err := loopbackServer(host); (err == nil) != ok {
			t.Errorf("loopbackServer(%q) = %v, want ok=%v", host, err, ok)
		}
	}
}

// TestSampleKinds: dev plays the sample kinds' operators, with
// their profiles' pod labels, and no other kind's.
func TestSampleKinds(t *testing.T) {
	profiles := append(profile.Samples(), v1alpha1.ScaleProfileSpec{Target: v1alpha1.TargetKind{APIVersion: "example.com/v1", Kind: "RackedCluster"}})
	got := map[string]Shape{}
	for _, k := range SampleKinds(profiles) {
		got[k.GVK.String()] = k.Shape
		if len(k.Labels) == 0 {
			t.Errorf("%s: no pod labels", k.GVK)
		}
	}
	want := map[string]Shape{
		"samples.scaleplane.io/v1alpha1, Kind=RackedCluster": ShapeRacks,
		"samples.scaleplane.io/v1alpha1, Kind=Function":      ShapeDeployment,
		"samples.scaleplane.io/v1alpha1, Kind=WorkerGroup":   ShapeLeaders,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
}
