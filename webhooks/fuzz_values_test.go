package webhooks

import (
	"context"
	"encoding/json"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FuzzMutateValues drives the mutating webhook with well-formed objects
// built from fuzzed counts, so that the fuzzer explores the contract's
// rules rather than JSON syntax. After the patch is applied: with replicas
// set every group has that many members (M5); a config at a spec path
// exists and has both bounds (M1, M2); a range without replicas on a kind
// whose HPA targets itself gets replicas = minReplicas (M4); and a second
// review patches nothing (M6).
func FuzzMutateValues(f *testing.F) {
	f.Add(uint8(0), uint8(0b1111), int32(3), int32(2), int32(6), int32(1), int32(5), int32(3))
	f.Add(uint8(1), uint8(0b0110), int32(-1), int32(0), int32(0), int32(0), int32(0), int32(0))
	f.Add(uint8(2), uint8(0b0100), int32(0), int32(4), int32(2), int32(7), int32(0), int32(9))
	f.Add(uint8(3), uint8(0b1011), int32(5), int32(5), int32(5), int32(2), int32(-3), int32(5))
	views := testViews(f)
	f.Fuzz(func(t *testing.T, k, present uint8, replicas, lo, hi, g0, g1, oldReplicas int32) {
		kind := fuzzKinds[int(k)%len(fuzzKinds)]
		view := views[kind]
		b := makeObj(kind, "v")
		if present&1 != 0 {
			b.replicas(int(replicas))
		}
		if present&2 != 0 {
			c := obj{}
			if present&16 == 0 {
				c["minReplicas"] = int(lo)
			}
			if present&32 == 0 {
				c["maxReplicas"] = int(hi)
			}
			b.config(c)
		}
		if present&4 != 0 && kind != function && kind != workerGroup {
			b.groups("a", int(g0), "b", int(g1))
		}
		req := create(view, b)
		if present&8 != 0 {
			old := makeObj(kind, "v").replicas(int(oldReplicas)).config(obj{"minReplicas": int(oldReplicas), "maxReplicas": int(oldReplicas)})
			req = update(view, old, b)
		}
		h := NewMutator(view)
		resp := h.Handle(context.Background(), req)
		if !resp.Allowed {
			t.Fatalf("refused a well-formed object: %+v", resp.Result)
		}
		patched := b.raw()
		if len(resp.Patches) > 0 {
			data, _ := json.Marshal(resp.Patches)
			patch, err := jsonpatchapply.DecodePatch(data)
			if err != nil {
				t.Fatal(err)
			}
			if patched, err = patch.Apply(patched); err != nil {
				t.Fatalf("patch %s does not apply: %v", data, err)
			}
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(patched); err != nil {
			t.Fatal(err)
		}
		w, errs := view.Read(u)
		if len(errs) > 0 {
			t.Fatalf("the defaulted object does not read: %v", errs)
		}
		l := view.Layout()
		if w.Replicas != nil {
			for i, g := range w.Groups {
				if g.Members == nil || *g.Members != *w.Replicas {
					t.Errorf("M5: group %d has %v members, replicas %d", i, g.Members, *w.Replicas)
				}
			}
			if w.Config == nil && !l.ConfigInAnnotation {
				t.Errorf("M1: replicas %d without a config", *w.Replicas)
			}
		}
		if w.Config != nil && (w.Config.MinReplicas == nil || w.Config.MaxReplicas == nil) {
			t.Errorf("M2: config bounds %v, %v", w.Config.MinReplicas, w.Config.MaxReplicas)
		}
		if w.Replicas == nil && w.Config.HasRange() && l.TargetSelf {
			t.Errorf("M4: a range without replicas")
		}
		req.Object.Raw = patched
		if again := h.Handle(context.Background(), req); len(again.Patches) > 0 {
			t.Errorf("M6: patched again: %+v", again.Patches)
		}
	})
}
