// Package lifecycle holds the e2e tests of a lifecycle
// that never wedges: several hundred autoscaled RackedClusters are created,
// scaled and deleted while the trigger autoscaler ticks them every second,
// and afterwards no worker is busy, goroutines are back to their baseline,
// the autoscaler remembers nothing of them and a new workload still scales;
// and the real scaleplane binary, interrupted with deletions in flight,
// exits 0 before its graceful-shutdown deadline.
//
// The webhook configurations are installed by the framework, pointing at
// its local serving address and key pair; the app under test (in this
// process, or the binary) serves them there with cert-mode files, so the
// API server calls it over TLS as in a cluster. Tests run one at a time:
// they share that address.
package lifecycle

import (
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/webhooks"
)

var cluster *framework.Cluster

func TestMain(m *testing.M) {
	// SCALEPLANE_E2E_VERBOSE shows the in-process app's logs.
	if os.Getenv("SCALEPLANE_E2E_VERBOSE") != "" {
		log.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		log.SetLogger(logr.Discard())
	}
	cfg := profile.SampleConfiguration()
	views, err := profile.CompileAll(cfg.Profiles)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
	// The framework points every Service path at its local webhook
	// server; the Service itself is never looked up.
	mutating, validating := webhooks.Configurations(views, webhooks.ConfigurationOptionsFromConfig(cfg.Webhook),
		webhooks.ServiceClientConfig("scaleplane-system", "scaleplane-webhook-service", 443))
	os.Exit(framework.Run(m, framework.Options{
		MutatingWebhooks:   []*admissionregistrationv1.MutatingWebhookConfiguration{mutating},
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{validating},
	}, &cluster))
}
