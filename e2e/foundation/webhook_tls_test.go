package foundation

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/profile"
)

// TestAPIServerCallsWebhookOverTLS runs the binary's own wiring (self-signed
// certificate, webhook configurations created from the profiles) and checks
// that a create through the API server comes back mutated: the API server
// reached the webhook over TLS with the injected CA.
func TestAPIServerCallsWebhookOverTLS(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port, probePort := freePort(t), freePort(t)
	cfg := profile.SampleConfiguration()
	cfg.Webhook.Host = "127.0.0.1"
	cfg.Webhook.Port = port
	cfg.Webhook.CertDir = filepath.Join(t.TempDir(), "certs")
	a, err := app.New(app.Options{
		Config:                       cfg,
		RestConfig:                   cluster.Config,
		CertMode:                     app.CertSelfSigned,
		Namespace:                    "scaleplane-tls-test",
		WebhookURL:                   "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		WebhookIPs:                   []string{"127.0.0.1"},
		MetricsAddr:                  "0",
		ProbeAddr:                    net.JoinHostPort("127.0.0.1", strconv.Itoa(probePort)),
		SkipControllerNameValidation: true,
	})
	if err != nil {
		t.Fatalf("build app: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("app stopped with: %v", err)
		}
		deleteWebhookConfigurations(t, cfg.Webhook)
	})

	ns := cluster.Namespace(t)
	waitReady(t, probePort, done)
	waitAdmitted(t, ns)
	if err := cluster.Client.Create(ctx, rackedCluster(ns, "tls", 3, 1, 2, 4)); err != nil {
		t.Fatalf("create: %v", err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(rackedClusterGVK)
	if err := cluster.Client.Get(ctx, key(ns, "tls"), got); err != nil {
		t.Fatalf("get: %v", err)
	}
	if diff := cmp.Diff([]int64{3, 3, 3}, members(t, got)); diff != "" {
		t.Errorf("rack members after create (-want +got):\n%s", diff)
	}
	wantConfig := map[string]any{"minReplicas": int64(3), "maxReplicas": int64(3)}
	gotConfig, _, _ := unstructured.NestedMap(got.Object, "spec", "scaleConfig")
	if diff := cmp.Diff(wantConfig, gotConfig); diff != "" {
		t.Errorf("defaulted scaleConfig (-want +got):\n%s", diff)
	}
}
