package scalehandle_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// What `scaleplane profile init` prints for the upstream ScyllaCluster CRD
// works as printed, through the binary's own wiring with no profile in its
// configuration: the ScaleHandle kind's ScaleProfile becomes Active at run
// time, the handle it printed scales every rack with kubectl scale, a
// rack edited by hand is put back, and the handle's webhooks default and
// validate it as any profiled kind's (M1, V2), and scaleplane explain
// reads its Scaling.
func TestProfileInitHandleThroughTheBinary(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "scaleplane")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	build.Dir = framework.BinaryModuleDir()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build scaleplane: %v\n%s", err, out)
	}
	startApp(t)
	ns := cluster.Namespace(t)

	cmd := exec.CommandContext(ctx, bin, "profile", "init", "--crd", "scyllaclusters.scylla.scylladb.com", "--name", "db", "--kubeconfig", cluster.Kubeconfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("profile init: %v\n%s", err, stderr.String())
	}
	printed := filepath.Join(t.TempDir(), "handle.yaml")
	if err := os.WriteFile(printed, stdout.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	check := exec.CommandContext(ctx, bin, "config", "check", "-f", printed, "--crd", filepath.Join(framework.RepoRoot(), "config", "crd", "bases", "scaleplane.io_scalehandles.yaml"))
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("scaleplane config check of profile init's output: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = cluster.Kubectl(context.Background(), "delete", "sprof", "--all") })
	kubectl(t, "apply", "--server-side", "-n", ns, "-f", printed)
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		out, err := cluster.Kubectl(ctx, "get", "sprof", "scalehandles.scaleplane.io", "-o", `jsonpath={.status.conditions[?(@.type=="Active")].status}`)
		return err == nil && out == "True", fmt.Sprintf("ScaleProfile scalehandles.scaleplane.io Active = %q (%v)", out, err)
	})

	kubectlApply(t, ns, scylla("db", 1, 2, 1))
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		out, err := cluster.Kubectl(ctx, "scale", "-n", ns, "scalehandle/db", "--replicas=3")
		return err == nil, fmt.Sprintf("kubectl scale scalehandle/db: %v %s", err, out)
	})
	waitRacks(t, ns, "db", 3, 3, 3)
	setRack(t, ns, "db", 2, 6)
	waitRacks(t, ns, "db", 3, 3, 3)
	// The handle was created before its kind's webhooks were: an update
	// through them pins its config to R (M1).
	kubectl(t, "annotate", "-n", ns, "scalehandle/db", "example.org/touched=yes")
	waitHandle(t, ns, "db", "scaleConfig pinned to 3", func(h *v1alpha1.ScaleHandle) bool {
		c := h.Spec.ScaleConfig
		return c != nil && c.MinReplicas != nil && c.MaxReplicas != nil && *c.MinReplicas == 3 && *c.MaxReplicas == 3
	})
	// explain reads the handle's Scaling, as for any profiled workload.
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		var s v1alpha1.Scaling
		err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: autoscaler.ScalingName("db", v1alpha1.GroupVersion.WithKind(v1alpha1.ScaleHandleKind).GroupKind())}, &s)
		return err == nil, fmt.Sprintf("the handle's Scaling: %v", err)
	})
	explain, err := exec.CommandContext(ctx, bin, "explain", ns+"/scalehandles/db", "--kubeconfig", cluster.Kubeconfig, "--timeout", "1m").CombinedOutput()
	if err != nil || !strings.Contains(string(explain), "ScaleHandle "+ns+"/db: pinned") {
		t.Errorf("scaleplane explain %s/scalehandles/db: %v\n%s", ns, err, explain)
	}
	// Admission refuses a bad count on the handle, with its field path.
	out, err := cluster.Kubectl(ctx, "patch", "-n", ns, "scalehandle/db", "--type=merge", "-p", `{"spec":{"scaleConfig":{"minReplicas":5,"maxReplicas":2}}}`)
	if err == nil || !strings.Contains(out+err.Error(), "spec.scaleConfig.minReplicas") {
		t.Errorf("an inverted range on the handle: %v %s; want it refused at spec.scaleConfig.minReplicas", err, out)
	}
}

// startApp runs the binary's wiring with a configuration that profiles
// nothing (or what configure adds), until the test ends; its webhook
// configurations go with it.
func startApp(t *testing.T, configure ...func(*configv1alpha2.Configuration)) {
	t.Helper()
	port := framework.FreePort(t)
	cfg := &configv1alpha2.Configuration{}
	cfg.APIVersion, cfg.Kind = configv1alpha2.APIVersion, configv1alpha2.Kind
	for _, f := range configure {
		f(cfg)
	}
	cfg.Default()
	cfg.Webhook.Host = "127.0.0.1"
	cfg.Webhook.Port = port
	cfg.Webhook.CertDir = filepath.Join(t.TempDir(), "certs")
	a, err := app.New(app.Options{
		Config:                       cfg,
		RestConfig:                   cluster.Config,
		CertMode:                     app.CertSelfSigned,
		Namespace:                    "scaleplane-scalehandle-e2e",
		WebhookURL:                   "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		WebhookIPs:                   []string{"127.0.0.1"},
		MetricsAddr:                  "0",
		ProbeAddr:                    "0",
		SkipControllerNameValidation: true,
	})
	if err != nil {
		t.Fatalf("build app: %v", err)
	}
	// Fail-closed webhooks pointing at a stopped app would refuse the next
	// test's writes: removed after the app stops (cleanups run last first).
	t.Cleanup(func() {
		_, _ = cluster.Kubectl(context.Background(), "delete", "mutatingwebhookconfigurations,validatingwebhookconfigurations", "--all")
	})
	framework.RunApp(t, a)
}
