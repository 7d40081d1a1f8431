package scaleplane_test

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/scaleplane/scaleplane"
	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/webhooks"
)

// An operator sets scaleplane up on its own manager, one kind at a time.
// The kind would normally be the operator's typed API object
// (&cachev1.CacheCluster{}, registered in the manager's scheme); the
// profile says only what the cluster cannot: where the scale config lives.
// Target and the /scale paths come from the scheme, the RESTMapper and the
// CRD.
func Example() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		panic(err)
	}
	sp, err := scaleplane.New(mgr, scaleplane.Options{
		Owner: "cache-operator",
		// Keep cache-operator-{mutating,validating}-webhook-configuration
		// in line, calling the operator's webhook Service.
		ClientConfig: webhooks.ServiceClientConfig("cache-system", "cache-operator-webhook", 443),
	})
	if err != nil {
		panic(err)
	}
	cache := &unstructured.Unstructured{}
	cache.SetAPIVersion("cache.example.com/v1")
	cache.SetKind("CacheCluster")
	err = sp.For(cache).
		WithProfile(v1alpha1.ScaleProfileSpec{
			ScaleConfig: v1alpha1.ScaleConfigLocation{Path: ".spec.autoscaling"},
			Pods:        v1alpha1.Pods{Labels: map[string]string{"app.kubernetes.io/instance": "${name}"}},
		}).
		// .WithAutoscaler(as) runs triggers; see controllers/autoscaler.
		Complete()
	if err != nil {
		panic(err)
	}
	// mgr.Start(ctrl.SetupSignalHandler())
}
