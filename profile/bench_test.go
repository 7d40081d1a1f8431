package profile

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	"github.com/scaleplane/scaleplane/scaling"
)

// The admission budget for a whole review is 50 µs and 200 allocations;
// Read and WriteSpec are two of its steps.

func BenchmarkRead(b *testing.B) {
	v := mustCompile(b, sample("RackedCluster"))
	u := benchObject()
	b.ReportAllocs()
	for b.Loop() {
		if _, errs := v.Read(u); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

func BenchmarkReadAnnotation(b *testing.B) {
	v := mustCompile(b, foreignProfile())
	data, err := json.Marshal(fullConfigObj())
	if err != nil {
		b.Fatal(err)
	}
	u := makeObj("Store", "st").
		set(".spec.size.perZone", 3).
		set(".spec.zones", list{obj{"zone": "a", "size": 3}, obj{"zone": "b", "size": 3}, obj{"zone": "c", "size": 3}}).
		set(".status.zones", obj{"a": obj{"ready": 3}, "b": obj{"ready": 3}, "c": obj{"ready": 3}}).
		annotate("scaleplane.io/scale-config", string(data)).obj()
	b.ReportAllocs()
	for b.Loop() {
		if _, errs := v.Read(u); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// BenchmarkWriteSpec writes a fan-out (new replicas, pins and members) into
// a fresh copy each time; the copy is measured separately below so that its
// cost can be subtracted.
func BenchmarkWriteSpec(b *testing.B) {
	v := mustCompile(b, sample("RackedCluster"))
	u := benchObject()
	w, errs := v.Read(u)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	five := int32(5)
	w.Replicas = &five
	w.Config.MinReplicas, w.Config.MaxReplicas = &five, &five
	for i := range w.Groups {
		w.Groups[i].Members = &five
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		c := u.DeepCopy()
		b.StartTimer()
		if err := v.WriteSpec(c, w); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteSpecUnchanged is the common case: the decision changed
// nothing.
func BenchmarkWriteSpecUnchanged(b *testing.B) {
	v := mustCompile(b, sample("RackedCluster"))
	u := benchObject()
	w, errs := v.Read(u)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := v.WriteSpec(u, w); err != nil {
			b.Fatal(err)
		}
	}
}

// The ways to turn a config into a scaling.Config: Read uses "direct" at a
// spec path and "annotation" for an annotation's text; the other two are
// for comparison.
func BenchmarkDecodeConfig(b *testing.B) {
	m := fullConfigObj()
	root := field.NewPath("spec", "scaleConfig")
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, errs := decodeConfig(m, root, false, nil); len(errs) > 0 {
				b.Fatal(errs)
			}
		}
	})
	// An annotation's text, through the same walker in strict mode.
	data, err := json.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("annotation", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, errs := DecodeConfigJSON(data, root); len(errs) > 0 {
				b.Fatal(errs)
			}
		}
	})
	b.Run("converter", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c scaling.Config
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			data, err := json.Marshal(m)
			if err != nil {
				b.Fatal(err)
			}
			var c scaling.Config
			if _, err := kjson.UnmarshalStrict(data, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
