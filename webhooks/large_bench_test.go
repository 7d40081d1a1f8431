package webhooks

import (
	"encoding/json"
	"fmt"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// largeObject is a RackedCluster the size of a large operator-managed
// object, about 95 KB as the API server sends it: applied by 20 managers
// (20 managedFields entries, each owning 15 annotations and 5 labels, as
// e2e/admission's BenchmarkUpdateLatency has the API server record them),
// a 40 KB pod template kept in an annotation, and a status. The view reads
// none of that bulk; the whole decode builds all of it into maps. edit
// changes one annotation's value, replicas the count (3 gives no patch).
func largeObject(edit, replicas int) *objBuilder {
	b := makeObj(rackedCluster, "db").replicas(replicas).config(fullConfig()).groups("rack-a", 3, "rack-b", 3, "rack-c", 3)
	labels := b.o["metadata"].(obj)["labels"].(obj)
	var managed list
	for m := range 20 {
		ann, lab := obj{}, obj{}
		for i := range 15 {
			k := fmt.Sprintf("tooling-%02d.example.com/setting-%02d", m, i)
			b.annotate(k, fmt.Sprintf("value of setting %d written by manager %d, revision %d", i, m, edit))
			ann["f:"+k] = obj{}
		}
		for i := range 5 {
			k := fmt.Sprintf("tooling-%02d.example.com/label-%d", m, i)
			labels[k] = fmt.Sprintf("v%d", i)
			lab["f:"+k] = obj{}
		}
		managed = append(managed, obj{"manager": fmt.Sprintf("tooling-%02d", m), "operation": "Apply",
			"apiVersion": "samples.scaleplane.io/v1alpha1", "time": "2026-11-22T01:00:00Z", "fieldsType": "FieldsV1",
			"fieldsV1": obj{"f:metadata": obj{"f:annotations": ann, "f:labels": lab}}})
	}
	b.annotate("operator.example.com/pod-template", podTemplateJSON())
	b.set(".metadata.managedFields", managed)
	b.set(".status", obj{"replicas": 3, "selector": "samples.scaleplane.io/cluster=db",
		"racks": list{obj{"name": "rack-a", "readyMembers": 3}, obj{"name": "rack-b", "readyMembers": 3}, obj{"name": "rack-c", "readyMembers": 3}}})
	return b
}

// podTemplateJSON is a pod template of seven containers with 60 variables,
// mounts and resources each: about 40 KB.
func podTemplateJSON() string {
	var containers list
	for c := range 7 {
		var env, mounts list
		for i := range 60 {
			env = append(env, obj{"name": fmt.Sprintf("SETTING_%d_%02d", c, i), "value": fmt.Sprintf("value-%02d-of-container-%d-with-some-length", i, c)})
		}
		for i := range 8 {
			mounts = append(mounts, obj{"name": fmt.Sprintf("volume-%d", i), "mountPath": fmt.Sprintf("/var/lib/data/volume-%d", i), "readOnly": i%2 == 0})
		}
		containers = append(containers, obj{"name": fmt.Sprintf("container-%d", c), "image": "registry.example.com/db/server:6.2.1",
			"env": env, "volumeMounts": mounts, "ports": list{obj{"name": "cql", "containerPort": 9042}, obj{"name": "metrics", "containerPort": 9180}},
			"resources": obj{"requests": obj{"cpu": "2", "memory": "8Gi"}, "limits": obj{"cpu": "4", "memory": "8Gi"}}})
	}
	data, err := json.Marshal(obj{"spec": obj{"containers": containers}})
	if err != nil {
		panic(err)
	}
	return string(data)
}

// BenchmarkLargeObject weighs admission's fast path, the view's decoder, on
// largeObject: "decode" is the view's decoder against the whole decode
// (and the view's read after it); "mutate" and "validate" are one review of
// an UPDATE that edits an annotation ("edit": no patch) or the replicas
// ("scale": M5's fan-out patch to three racks), by the webhook ("fast") and
// on the reference path ("reference": the whole object decoded and diffed).
func BenchmarkLargeObject(b *testing.B) {
	view := testViews(b)[rackedCluster]
	old := largeObject(0, 3)
	raw := old.raw()
	b.Logf("object: %d bytes", len(raw))
	for _, dec := range []struct {
		name string
		d    *decoder
	}{{"view", newDecoder(view.Layout())}, {"whole", wholeDecoder()}} {
		b.Run("decode/"+dec.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			start := cpuTime()
			n := 0
			for b.Loop() {
				o, err := dec.d.decode(raw)
				if err != nil {
					b.Fatal(err)
				}
				if _, errs := o.read(view); len(errs) > 0 {
					b.Fatal(errs)
				}
				n++
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(n), "cpu-ns/op")
		})
	}
	for _, shape := range []struct {
		name  string
		cur   *objBuilder
		patch bool
	}{{"edit", largeObject(1, 3), false}, {"scale", largeObject(0, 4), true}} {
		req := update(view, old, shape.cur)
		for _, arm := range []struct {
			name             string
			mutate, validate admission.Handler
		}{
			{"fast", NewMutator(view), NewValidator(view, testSources())},
			{"reference", NewReferenceMutator(view), NewReferenceValidator(view, testSources())},
		} {
			b.Run("mutate/"+shape.name+"/"+arm.name, func(b *testing.B) {
				benchReview(b, arm.mutate, req, true, shape.patch)
			})
			b.Run("validate/"+shape.name+"/"+arm.name, func(b *testing.B) {
				benchReview(b, arm.validate, req, true, false)
			})
		}
	}
}
