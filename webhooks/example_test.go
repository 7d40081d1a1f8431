package webhooks_test

import (
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/webhooks"
)

// Wiring the webhooks into an operator's manager: register the handlers,
// and keep the cluster's webhook configurations in line with the profiles
// at start-up.
func Example() {
	cfg := profile.SampleConfiguration()
	views, err := profile.CompileAll(cfg.Profiles)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		// The /scale webhook reads parents through the manager's client;
		// caching unstructured objects keeps those reads off the API server.
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	// This process runs no trigger autoscaler, so it refuses triggers (no
	// Sources). A process that runs one gives the webhooks the same Sources
	// as its autoscaler, as cmd/scaleplane/app does.
	if err := webhooks.Setup(mgr, views, webhooks.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	sync, err := webhooks.NewConfigurationSync(mgr, views, webhooks.ConfigurationOptionsFromConfig(cfg.Webhook))
	if err == nil {
		err = mgr.Add(sync)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	_ = mgr.Start(ctrl.SetupSignalHandler())
}

// The webhook configurations for the sample profiles, calling the Service
// of config/webhook.
func ExampleConfigurations() {
	var views []*profile.Compiled
	for _, p := range profile.Samples()[:1] {
		v, err := profile.Compile(p)
		if err != nil {
			panic(err)
		}
		views = append(views, v)
	}
	mutating, validating := webhooks.Configurations(views, webhooks.ConfigurationOptions{},
		webhooks.ServiceClientConfig("scaleplane-system", "scaleplane-webhook-service", 443))
	for _, w := range mutating.Webhooks {
		fmt.Println(mutating.Name, w.Name, *w.ClientConfig.Service.Path, w.Rules[0].Resources, w.Rules[0].Operations)
	}
	for _, w := range validating.Webhooks {
		fmt.Println(validating.Name, w.Name, *w.ClientConfig.Service.Path, w.Rules[0].Resources, w.Rules[0].Operations)
	}
	// Output:
	// scaleplane-mutating-webhook-configuration rackedclusters.v1alpha1.samples.scaleplane.io.scaleplane.scaleplane.io /mutate/samples.scaleplane.io/v1alpha1/rackedclusters [rackedclusters] [CREATE UPDATE]
	// scaleplane-validating-webhook-configuration rackedclusters.v1alpha1.samples.scaleplane.io.scaleplane.scaleplane.io /validate/samples.scaleplane.io/v1alpha1/rackedclusters [rackedclusters] [CREATE UPDATE]
	// scaleplane-validating-webhook-configuration scale.rackedclusters.v1alpha1.samples.scaleplane.io.scaleplane.scaleplane.io /validate-scale/samples.scaleplane.io/v1alpha1/rackedclusters [rackedclusters/scale] [UPDATE]
}
