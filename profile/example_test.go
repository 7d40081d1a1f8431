package profile_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
)

// A compiled profile reads a workload object as scaling values and writes
// decisions back, touching nothing else.
func ExampleCompiled() {
	var spec v1alpha1.ScaleProfileSpec
	for _, p := range profile.Samples() {
		if p.Target.Kind == "RackedCluster" {
			spec = p
		}
	}
	compiled, err := profile.Compile(spec)
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "samples.scaleplane.io/v1alpha1",
		"kind":       "RackedCluster",
		"metadata":   map[string]interface{}{"name": "db"},
		"spec": map[string]interface{}{
			"replicas": int64(3),
			"racks": []interface{}{
				map[string]interface{}{"name": "a", "members": int64(3)},
				map[string]interface{}{"name": "b", "members": int64(2), "storage": "10Gi"},
			},
		},
	}}
	w, errs := compiled.Read(u)
	if len(errs) > 0 {
		panic(errs.ToAggregate())
	}
	fmt.Println("replicas:", *w.Replicas, "config:", w.Config != nil, "racks:", len(w.Groups))

	// A fan-out decision: every rack to R.
	for i := range w.Groups {
		w.Groups[i].Members = w.Replicas
	}
	if err := compiled.WriteSpec(u, w); err != nil {
		panic(err)
	}
	fmt.Println(u.Object["spec"].(map[string]interface{})["racks"])

	selector, err := compiled.PodSelector(u)
	if err != nil {
		panic(err)
	}
	fmt.Println(selector)
	// Output:
	// replicas: 3 config: false racks: 2
	// [map[members:3 name:a] map[members:3 name:b storage:10Gi]]
	// samples.scaleplane.io/cluster=db,samples.scaleplane.io/rack=a
}

// Read reports every problem of an object at its exact field path.
func ExampleCompiled_Read_errors() {
	compiled, err := profile.Compile(profile.Samples()[1]) // Function
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"spec": map[string]interface{}{
			"replicas":    "two",
			"scaleConfig": map[string]interface{}{"minReplicas": 1.5, "maxReplicas": int64(4)},
		},
	}}
	_, errs := compiled.Read(u)
	for _, e := range errs {
		fmt.Println(e)
	}
	// Output:
	// spec.replicas: Invalid value: "two": must be an integer, not a string
	// spec.scaleConfig.minReplicas: Invalid value: 1.5: must be an integer, not a number
}

// A scale config held in an annotation is decoded strictly (V9), with
// every problem at its path.
func ExampleDecodeConfigJSON() {
	path := field.NewPath("metadata", "annotations").Key("scaleplane.io/scale-config")
	_, errs := profile.DecodeConfigJSON([]byte(`{"minReplicas":"1","maxReplica":5}`), path)
	for _, err := range errs {
		fmt.Println(err)
	}
	// Output:
	// metadata.annotations[scaleplane.io/scale-config].minReplicas: Invalid value: "1": must be an integer, not a string
	// metadata.annotations[scaleplane.io/scale-config].maxReplica: Invalid value: "maxReplica": unknown field "maxReplica"; remove it or correct its spelling (field names are case-sensitive)
}
