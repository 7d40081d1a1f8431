package controllers

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/scaleplane/scaleplane/profile"
)

// sampleView returns the view of the sample profile of kind.
func sampleView(t testing.TB, kind string) *profile.Compiled {
	t.Helper()
	for _, p := range profile.Samples() {
		if p.Target.Kind == kind {
			v, err := profile.Compile(p)
			if err != nil {
				t.Fatalf("view of %s: %v", kind, err)
			}
			return v
		}
	}
	t.Fatalf("no sample profile %s", kind)
	return nil
}

// objBuilder builds sample workloads: rc("demo").replicas(3).rack("a", 1).obj().
type objBuilder struct{ u *unstructured.Unstructured }

func workload(kind, name string) *objBuilder {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": profile.SampleGroup + "/" + profile.SampleVersion,
		"kind":       kind,
		"metadata":   map[string]interface{}{"name": name, "namespace": "ns", "uid": "uid-" + name},
		"spec":       map[string]interface{}{},
	}}
	return &objBuilder{u}
}

func rc(name string) *objBuilder { return workload("RackedCluster", name) }
func fn(name string) *objBuilder { return workload("Function", name) }

func (b *objBuilder) replicas(n int64) *objBuilder {
	_ = unstructured.SetNestedField(b.u.Object, n, "spec", "replicas")
	return b
}

func (b *objBuilder) rack(name string, members int64) *objBuilder {
	racks, _, _ := unstructured.NestedSlice(b.u.Object, "spec", "racks")
	racks = append(racks, map[string]interface{}{"name": name, "members": members})
	_ = unstructured.SetNestedSlice(b.u.Object, racks, "spec", "racks")
	return b
}

func (b *objBuilder) ready(name string, ready int64) *objBuilder {
	racks, _, _ := unstructured.NestedSlice(b.u.Object, "status", "racks")
	racks = append(racks, map[string]interface{}{"name": name, "readyMembers": ready})
	_ = unstructured.SetNestedSlice(b.u.Object, racks, "status", "racks")
	return b
}

// readyAt reports a rack's ready members as of an observed generation.
func (b *objBuilder) readyAt(name string, ready, observed int64) *objBuilder {
	racks, _, _ := unstructured.NestedSlice(b.u.Object, "status", "racks")
	racks = append(racks, map[string]interface{}{"name": name, "readyMembers": ready, "observedGeneration": observed})
	_ = unstructured.SetNestedSlice(b.u.Object, racks, "status", "racks")
	return b
}

func (b *objBuilder) status(field string, v interface{}) *objBuilder {
	_ = unstructured.SetNestedField(b.u.Object, v, "status", field)
	return b
}

func (b *objBuilder) config(c map[string]interface{}) *objBuilder {
	_ = unstructured.SetNestedMap(b.u.Object, c, "spec", "scaleConfig")
	return b
}

func (b *objBuilder) obj() *unstructured.Unstructured { return b.u }

// cpu is a scale config metric: CPU at pct percent utilization.
func cpu(pct int64) map[string]interface{} {
	return map[string]interface{}{
		"type": "Resource",
		"resource": map[string]interface{}{
			"name":   "cpu",
			"target": map[string]interface{}{"type": "Utilization", "averageUtilization": pct},
		},
	}
}

func bounds(lo, hi int64, metrics ...interface{}) map[string]interface{} {
	c := map[string]interface{}{"minReplicas": lo, "maxReplicas": hi}
	if len(metrics) > 0 {
		c["metrics"] = metrics
	}
	return c
}
