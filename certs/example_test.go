package certs_test

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/scaleplane/scaleplane/certs"
)

// Self-signed mode in a manager that serves webhooks: bootstrap the key pair
// before the manager starts its webhook server, then keep it renewed.
func Example_selfSigned() {
	certDir := "/tmp/scaleplane-webhook-certs"
	o := certs.Options{
		Mode:                            certs.ModeSelfSigned,
		SecretNamespace:                 "scaleplane-system",
		SecretName:                      "scaleplane-webhook-server-cert",
		DNSNames:                        certs.ServiceDNSNames("scaleplane-webhook-service", "scaleplane-system"),
		MutatingWebhookConfigurations:   []string{"scaleplane-mutating-webhook-configuration"},
		ValidatingWebhookConfigurations: []string{"scaleplane-validating-webhook-configuration"},
		CertDir:                         certDir,
	}
	cfg := ctrl.GetConfigOrDie()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		WebhookServer: webhook.NewServer(webhook.Options{CertDir: certDir}),
	})
	if err != nil {
		panic(err)
	}
	r, err := certs.New(cfg, o)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.Bootstrap(ctx); err != nil {
		panic(err)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		panic(err)
	}
	_ = mgr.Start(ctrl.SetupSignalHandler())
}
