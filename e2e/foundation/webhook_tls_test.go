package foundation

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/config"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// TestAPIServerCallsWebhookOverTLS runs the binary's own wiring (self-signed
// certificate, webhook configurations created from the profiles) and checks
// that a create through the API server comes back mutated: the API server
// reached the webhook over TLS with the injected CA.
func TestAPIServerCallsWebhookOverTLS(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port, probePort := freePort(t), freePort(t)
	cfg := config.SampleConfiguration()
	cfg.Webhook.Host = "127.0.0.1"
	cfg.Webhook.Port = port
	cfg.Webhook.CertDir = filepath.Join(t.TempDir(), "certs")
	a, err := app.New(app.Options{
		Config:      cfg,
		RestConfig:  cluster.Config,
		CertMode:    app.CertSelfSigned,
		Namespace:   "scaleplane-tls-test",
		WebhookURL:  "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		WebhookIPs:  []string{"127.0.0.1"},
		MetricsAddr: "0",
		ProbeAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(probePort)),
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
	})

	ns := cluster.Namespace(t)
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort)
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		resp, err := http.Get(readyz)
		if err != nil {
			return false, fmt.Sprintf("readyz: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Sprintf("readyz: %s", resp.Status)
	})
	// The API server learns about new webhook configurations through an
	// informer; a server-side dry run shows when admission goes through
	// the webhook without leaving an object behind.
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		u := rackedCluster(ns, "tls", 3, 1, 2, 4)
		if err := cluster.Client.Create(ctx, u, client.DryRunAll); err != nil {
			return false, fmt.Sprintf("dry-run create: %v", err)
		}
		m := members(t, u)
		return m[0] == 3, fmt.Sprintf("dry-run create not mutated yet: racks %v", m)
	})
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
