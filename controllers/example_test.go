package controllers_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/profile"
)

// Wiring the controllers for the sample kinds into a manager.
func ExampleSetup() {
	var views []*profile.Compiled
	for _, p := range profile.Samples() {
		v, err := profile.Compile(p)
		if err != nil {
			panic(err)
		}
		views = append(views, v)
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		panic(err)
	}
	if err := controllers.Setup(mgr, views, controllers.Options{}); err != nil {
		panic(err)
	}
	// mgr.Start(ctrl.SetupSignalHandler()) runs them on the elected leader.
}

// The built-in HPA's name is deterministic, so users and tools can find it.
func ExampleHPAName() {
	fmt.Println(controllers.HPAName("demo", schema.GroupKind{Group: "samples.scaleplane.io", Kind: "RackedCluster"}))
	// Output: demo-rackedcluster.samples.scaleplane.io
}
