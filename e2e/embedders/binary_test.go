package embedders

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
)

// binary runs the scaleplane binary's own wiring (app.New, owner
// scaleplane, the sample profiles, self-signed certificates) in the test
// process, as e2e/autoscaler does.
type binary struct {
	port   int
	cancel context.CancelFunc
	done   chan error
}

func (b *binary) start(t *testing.T) {
	t.Helper()
	if b.port == 0 {
		b.port = framework.FreePort(t)
	}
	cfg := profile.SampleConfiguration()
	cfg.Webhook.Host = "127.0.0.1"
	cfg.Webhook.Port = b.port
	cfg.Webhook.CertDir = filepath.Join(t.TempDir(), "certs")
	a, err := app.New(app.Options{
		Config:                       cfg,
		RestConfig:                   cluster.Config,
		CertMode:                     app.CertSelfSigned,
		Namespace:                    "scaleplane-system",
		WebhookURL:                   "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)),
		WebhookIPs:                   []string{"127.0.0.1"},
		MetricsAddr:                  "0",
		ProbeAddr:                    "0",
		SkipControllerNameValidation: true,
	})
	if err != nil {
		t.Fatalf("build the binary's app: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel, b.done = cancel, make(chan error, 1)
	go func() { b.done <- a.Run(ctx) }()
	t.Cleanup(b.stop)
}

func (b *binary) stop() {
	if b.cancel == nil {
		return
	}
	b.cancel()
	if err := <-b.done; err != nil {
		fmt.Fprintf(os.Stderr, "embedders: the binary stopped with: %v\n", err)
	}
	b.cancel = nil
}

// TestBinaryBesideEmbedder: the scaleplane binary (owner
// scaleplane, every sample kind) and an operator embedding scaleplane for a
// kind the binary also profiles run in one cluster; each one's start-up and
// restart leaves the other's webhook configurations as they were, and both
// judge the shared kind.
func TestBinaryBesideEmbedder(t *testing.T) {
	ctx := context.Background()
	if err := cluster.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "scaleplane-system"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	op := &embedder{owner: "worker-operator", kinds: []schema.GroupVersionKind{workerGroupGVK}}
	removeConfigurations(t, "scaleplane", op.owner)
	bin := &binary{}
	bin.start(t)
	op.start(t)

	want := map[string][]string{
		"scaleplane": wantEntries("scaleplane", "rackedclusters", "samplefunctions", "workergroups"),
		op.owner:     wantEntries(op.owner, "workergroups"),
	}
	inLine := func(ctx context.Context) (bool, string) {
		for owner, w := range want {
			got, err := entries(ctx, owner)
			if err != nil {
				return false, err.Error()
			}
			if !slices.Equal(w, got) {
				return false, fmt.Sprintf("%s's entries %v, want %v", owner, got, w)
			}
		}
		return true, ""
	}
	framework.Eventually(t, 0, inLine)
	ns := cluster.Namespace(t)
	// Both validating webhooks judge the shared kind (the API server calls
	// them in turn; whichever it calls first refuses), and the binary's own
	// kinds are judged by the binary.
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		a, msgA := refusedBy(ctx, overMax(ns, workerGroupGVK), "workergroups.v1alpha1.samples.scaleplane.io.scaleplane.scaleplane.io")
		b, _ := refusedBy(ctx, overMax(ns, workerGroupGVK), "workergroups.v1alpha1.samples.scaleplane.io.worker-operator.scaleplane.io")
		return a || b, msgA
	})
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		return refusedBy(ctx, overMax(ns, framework.RackedClusterGVK), "rackedclusters.v1alpha1.samples.scaleplane.io.scaleplane.scaleplane.io")
	})

	rvOf := func(name string) string {
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Name: name}, v); err != nil {
			t.Fatal(err)
		}
		return v.ResourceVersion
	}
	binRV := rvOf("scaleplane-validating-webhook-configuration")

	// The embedder restarts: the binary's configuration is not written.
	op.stop()
	op.start(t)
	framework.Eventually(t, 0, inLine)
	if got := rvOf("scaleplane-validating-webhook-configuration"); got != binRV {
		t.Errorf("the embedder's restart wrote the binary's configuration (resourceVersion %s -> %s)", binRV, got)
	}
	// The binary restarts: the embedder's configuration is not written.
	opRV := rvOf(op.owner + "-validating-webhook-configuration")
	bin.stop()
	bin.start(t)
	framework.Eventually(t, 0, inLine)
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		return refusedBy(ctx, overMax(ns, framework.RackedClusterGVK), "rackedclusters.v1alpha1.samples.scaleplane.io.scaleplane.scaleplane.io")
	})
	if got := rvOf(op.owner + "-validating-webhook-configuration"); got != opRV {
		t.Errorf("the binary's restart wrote the embedder's configuration (resourceVersion %s -> %s)", opRV, got)
	}
}
