package controllers_test

import (
	"context"
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/webhooks"
)

// Webhook outage: scaleplane's webhook configurations installed with
// failurePolicy Ignore and pointing at an address where no server runs.
// kubectl scale still reaches every rack, through the controller alone:
// the webhooks only ever help, the fan-out does not depend on them.
func TestScaleReachesRacksDuringWebhookOutage(t *testing.T) {
	var views []*profile.Compiled
	for _, p := range profile.Samples() {
		v, err := profile.Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		views = append(views, v)
	}
	// The framework reserved this port for a webhook server; this package
	// starts none, so nothing answers there.
	down := func(path string) admissionregistrationv1.WebhookClientConfig {
		url := fmt.Sprintf("https://%s:%d%s", cluster.WebhookHost, cluster.WebhookPort, path)
		return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: cluster.CAData}
	}
	mutating, validating := webhooks.Configurations(views, webhooks.ConfigurationOptions{
		MutatingConfigurationName:   "scaleplane-e2e-outage",
		ValidatingConfigurationName: "scaleplane-e2e-outage",
	}, down)
	ignore := admissionregistrationv1.Ignore
	for i := range mutating.Webhooks {
		mutating.Webhooks[i].FailurePolicy = &ignore
	}
	for i := range validating.Webhooks {
		validating.Webhooks[i].FailurePolicy = &ignore
	}
	ctx := context.Background()
	if err := cluster.Client.Create(ctx, mutating); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), mutating) })
	if err := cluster.Client.Create(ctx, validating); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), validating) })

	startManager(t, controllers.Options{})
	ns := cluster.Namespace(t)
	kubectlApply(t, ns, demo)
	kubectl(t, "scale", "-n", ns, "rackedcluster/demo", "--replicas=4")
	waitRacks(t, ns, "demo", 4)
}
