package controllers

import (
	"testing"

	"github.com/scaleplane/scaleplane/scaling"
)

// The per-reconcile work that is not I/O: reading the workload through
// its profile and planning each policy's write. 1000 workloads reconcile
// in the e2e scale test; these say how little of that time is ours.

func BenchmarkFanOutObject(b *testing.B) {
	v := sampleView(b, "RackedCluster")
	u := rc("demo").replicas(5).rack("a", 3).rack("b", 3).rack("c", 3).obj()
	b.ReportAllocs()
	for b.Loop() {
		w, _ := v.Read(u)
		if _, changed, err := fanOutObject(v, u, w); err != nil || !changed {
			b.Fatal(changed, err)
		}
	}
}

func BenchmarkPlanStatus(b *testing.B) {
	v := sampleView(b, "RackedCluster")
	u := rc("demo").replicas(3).rack("a", 3).rack("b", 3).rack("c", 3).ready("a", 3).ready("b", 3).ready("c", 3).obj()
	b.ReportAllocs()
	for b.Loop() {
		w, _ := v.Read(u)
		if _, err := planStatus(v, u, w); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHPAUpToDate(b *testing.B) {
	v := sampleView(b, "RackedCluster")
	u := rc("demo").replicas(1).rack("a", 1).config(bounds(2, 6, cpu(50))).obj()
	w, _ := v.Read(u)
	d := scaling.DecideHPA(w, v.Layout(), nil, nil)
	desired, err := desiredHPA(v, "scaleplane", u, d)
	if err != nil {
		b.Fatal(err)
	}
	existing := desired.DeepCopy()
	b.ReportAllocs()
	for b.Loop() {
		if !hpaUpToDate(existing, desired) {
			b.Fatal("not up to date")
		}
	}
}
