// Command cache-operator is the example operator: a manager with the
// cache API, scaleplane wired for its two kinds (package operator), and
// the trigger autoscaler.
package main

import (
	"flag"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/webhooks"

	cachev1 "github.com/scaleplane/scaleplane/examples/cachecluster/api/v1"
	"github.com/scaleplane/scaleplane/examples/cachecluster/operator"
)

func main() {
	namespace := flag.String("namespace", "cache-system", "namespace of the operator's webhook Service")
	service := flag.String("webhook-service", "cache-operator-webhook", "the operator's webhook Service")
	flag.Parse()
	ctrl.SetLogger(zap.New())
	log := ctrl.Log.WithName("cache-operator")

	scheme := runtime.NewScheme()
	must(clientgoscheme.AddToScheme(scheme))
	must(cachev1.AddToScheme(scheme))
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:           scheme,
		LeaderElection:   true,
		LeaderElectionID: "cache-operator.cache.example.com",
		WebhookServer:    webhook.NewServer(webhook.Options{Port: 9443}),
	})
	must(err)
	// The trigger autoscaler with its embedded metric store and scraper.
	as, err := autoscaler.NewWithMetrics(mgr, autoscaler.MetricsOptions{Owner: operator.Owner})
	must(err)
	must(operator.Setup(mgr, operator.Options{
		ClientConfig: webhooks.ServiceClientConfig(*namespace, *service, 443),
		Autoscaler:   as,
	}))
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
}

func must(err error) {
	if err != nil {
		ctrl.Log.Error(err, "set-up failed")
		os.Exit(1)
	}
}
