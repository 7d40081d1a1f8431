package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/profile/profiletest"
)

func TestFanOutObject(t *testing.T) {
	v := sampleView(t, "RackedCluster")
	tests := []struct {
		name        string
		in          *unstructured.Unstructured
		wantChanged bool
		want        *unstructured.Unstructured
	}{{
		name:        "C1 racks differ: every rack gets R",
		in:          rc("demo").replicas(5).rack("a", 3).rack("b", 5).rack("c", 1).obj(),
		wantChanged: true,
		want:        rc("demo").replicas(5).rack("a", 5).rack("b", 5).rack("c", 5).obj(),
	}, {
		name:        "C1 pinned config follows R",
		in:          rc("demo").replicas(4).rack("a", 4).config(bounds(3, 3)).obj(),
		wantChanged: true,
		want:        rc("demo").replicas(4).rack("a", 4).config(bounds(4, 4)).obj(),
	}, {
		name: "C1 config with a range is the user's",
		in:   rc("demo").replicas(4).rack("a", 4).config(bounds(2, 6)).obj(),
		want: rc("demo").replicas(4).rack("a", 4).config(bounds(2, 6)).obj(),
	}, {
		name: "R absent: racks keep their own members",
		in:   rc("demo").rack("a", 1).rack("b", 2).obj(),
		want: rc("demo").rack("a", 1).rack("b", 2).obj(),
	}, {
		name: "already fanned out: no write",
		in:   rc("demo").replicas(2).rack("a", 2).rack("b", 2).obj(),
		want: rc("demo").replicas(2).rack("a", 2).rack("b", 2).obj(),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.in.DeepCopy()
			w, errs := v.Read(tt.in)
			if len(errs) > 0 {
				t.Fatalf("read: %v", errs)
			}
			got, changed, err := fanOutObject(v, tt.in, w)
			if err != nil {
				t.Fatalf("fanOutObject: %v", err)
			}
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if diff := cmp.Diff(tt.want.Object, got.Object); diff != "" {
				t.Errorf("object (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before.Object, tt.in.Object); diff != "" {
				t.Errorf("input modified (-before +after):\n%s", diff)
			}
		})
	}
}

func TestFanOutNote(t *testing.T) {
	tests := []struct {
		name string
		kind string
		in   *unstructured.Unstructured
		want string
	}{{
		name: "racks with old and new sizes",
		kind: "RackedCluster",
		in:   rc("demo").replicas(5).rack("a", 3).rack("b", 2).obj(),
		want: "spec.racks[*].members a=3, b=2 -> 5 (spec.replicas 5)",
	}, {
		name: "racks and pin",
		kind: "RackedCluster",
		in:   rc("demo").replicas(5).rack("a", 3).config(bounds(3, 3)).obj(),
		want: "spec.racks[*].members a=3 -> 5 (spec.replicas 5); spec.scaleConfig pinned 3 -> 5",
	}, {
		name: "kind without groups: only the pin",
		kind: "Function",
		in:   fn("hello").replicas(2).config(bounds(1, 1)).obj(),
		want: "spec.scaleConfig pinned 1 -> 2",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := sampleView(t, tt.kind)
			before, errs := v.Read(tt.in)
			if len(errs) > 0 {
				t.Fatalf("read: %v", errs)
			}
			out, _, err := fanOutObject(v, tt.in, before)
			if err != nil {
				t.Fatal(err)
			}
			after, _ := v.Read(out)
			if diff := cmp.Diff(tt.want, fanOutNote(v.Layout(), before, after)); diff != "" {
				t.Errorf("note (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFanOutUnicodeSpace holds, in the
// fan-out controller: a pinned annotation config with a leading space that
// JSON does not allow was read (a hand-written path trimmed it) but could
// not be rewritten (encoding/json refused it), so every reconcile failed.
// One decoder reads and writes it now: the read reports the annotation, and
// nothing read cleanly ever fails to be written.
func TestFanOutUnicodeSpace(t *testing.T) {
	v, err := profile.Compile(profiletest.ZonedDatabase())
	if err != nil {
		t.Fatal(err)
	}
	for _, space := range []string{"\u00a0", "\u2028", "\v", "\f"} {
		for _, ann := range []string{space + `{"minReplicas":2,"maxReplicas":2}`, `{"minReplicas":2,"maxReplicas":2}` + space} {
			u := &unstructured.Unstructured{Object: map[string]interface{}{
				"apiVersion": "data.example.org/v1beta1", "kind": "ZonedDatabase",
				"metadata": map[string]interface{}{"name": "zdb", "namespace": "ns",
					"annotations": map[string]interface{}{v1alpha1.AnnotationScaleConfig: ann}},
				"spec": map[string]interface{}{"topology": map[string]interface{}{
					"replicasPerZone": int64(3),
					"zones":           []interface{}{map[string]interface{}{"zoneName": "eu-1", "size": int64(3)}},
				}},
			}}
			w, errs := v.Read(u)
			if len(errs) == 0 {
				if _, _, err := fanOutObject(v, u, w); err != nil {
					t.Errorf("annotation %q: read cleanly but the fan-out fails: %v", ann, err)
				}
				t.Errorf("annotation %q is not JSON but was read as %+v", ann, w.Config)
				continue
			}
			if len(errs) != 1 || errs[0].Field != "metadata.annotations[scaleplane.io/scale-config]" {
				t.Errorf("annotation %q: errors %v, want one at the annotation", ann, errs)
			}
		}
	}
}
