package foundation

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
)

// TestBinaryUnderShippedRBAC runs the whole binary (webhooks, certificate
// rotation, controllers, autoscaler, metrics server, leader election) as
// the ServiceAccount of config/rbac (with the sample kinds' rules of
// config/samples/deploy), authenticated by a token as in a pod,
// and checks that every part works with exactly the permissions shipped.
func TestBinaryUnderShippedRBAC(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = "scaleplane-system"
	if err := cluster.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace: %v", err)
	}
	rendered, err := cluster.Kubectl(ctx, "kustomize", filepath.Join(framework.RepoRoot(), "config", "rbac"))
	if err != nil {
		t.Fatalf("render config/rbac: %v", err)
	}
	if out, err := cluster.KubectlWithInput(ctx, rendered, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply config/rbac: %v\n%s", err, out)
	}
	// The rules for the sample kinds, as config/samples/deploy patches them
	// into config/rbac's (empty) profiled-kinds role.
	if out, err := cluster.Kubectl(ctx, "apply", "-f", filepath.Join(framework.RepoRoot(), "config", "samples", "deploy", "profiled_kinds_role.yaml")); err != nil {
		t.Fatalf("apply the sample kinds' role: %v\n%s", err, out)
	}
	// config/default installs the ScaleProfile CRD; scaleplane runs its
	// reconciler only where it is served.
	spCRD := filepath.Join(framework.RepoRoot(), "config", "crd", "bases", "scaleplane.io_scaleprofiles.yaml")
	if out, err := cluster.Kubectl(ctx, "apply", "--server-side", "-f", spCRD); err != nil {
		t.Fatalf("apply the ScaleProfile CRD: %v\n%s", err, out)
	}
	if out, err := cluster.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s", "-f", spCRD); err != nil {
		t.Fatalf("wait for the ScaleProfile CRD: %v\n%s", err, out)
	}
	cs, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	token := func(namespace, sa string) string {
		tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token for %s/%s: %v", namespace, sa, err)
		}
		return tr.Status.Token
	}
	// The manager's identity: the ServiceAccount's token and nothing else.
	managerCfg := rest.AnonymousClientConfig(cluster.Config)
	managerCfg.BearerToken = token(ns, "scaleplane-controller-manager")
	managerCfg.QPS, managerCfg.Burst = 200, 400

	webhookPort, metricsPort, probePort := freePort(t), freePort(t), freePort(t)
	cfg := profile.SampleConfiguration()
	cfg.Webhook.Host = "127.0.0.1"
	cfg.Webhook.Port = webhookPort
	cfg.Webhook.CertDir = filepath.Join(t.TempDir(), "certs")
	metricsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(metricsPort))
	a, err := app.New(app.Options{
		Config:                       cfg,
		RestConfig:                   managerCfg,
		Namespace:                    ns,
		CertMode:                     app.CertSelfSigned,
		WebhookURL:                   "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(webhookPort)),
		WebhookIPs:                   []string{"127.0.0.1"},
		MetricsAddr:                  metricsAddr,
		ProbeAddr:                    net.JoinHostPort("127.0.0.1", strconv.Itoa(probePort)),
		LeaderElection:               true,
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
	waitReady(t, probePort, done)

	// Admission: the webhook server's certificate came from the rotator,
	// which wrote the Secret and injected caBundle under the shipped role.
	work := cluster.Namespace(t)
	waitAdmitted(t, work)
	if err := cluster.Client.Create(ctx, rackedCluster(work, "rbac", 3, 1, 2, 4)); err != nil {
		t.Fatalf("create: %v", err)
	}
	// Fan-out after /scale (controllers, leader-elected under the lease role).
	if out, err := cluster.Kubectl(ctx, "-n", work, "scale", "rackedcluster/rbac", "--replicas=4"); err != nil {
		t.Fatalf("kubectl scale: %v\n%s", err, out)
	}
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(rackedClusterGVK)
		if err := cluster.Client.Get(ctx, key(work, "rbac"), got); err != nil {
			return false, err.Error()
		}
		m := members(t, got)
		return cmp.Equal(m, []int64{4, 4, 4}), fmt.Sprintf("racks %v, want [4 4 4]", m)
	})
	// The HPA lifecycle (C4).
	hpaObj := rackedCluster(work, "hpa", 2, 2, 2)
	_ = unstructured.SetNestedMap(hpaObj.Object, map[string]any{
		"minReplicas": int64(2), "maxReplicas": int64(5),
		"metrics": []any{map[string]any{"type": "Resource", "resource": map[string]any{
			"name": "cpu", "target": map[string]any{"type": "Utilization", "averageUtilization": int64(60)}}}},
	}, "spec", "scaleConfig")
	if err := cluster.Client.Create(ctx, hpaObj); err != nil {
		t.Fatalf("create autoscaled: %v", err)
	}
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		var list autoscalingv2.HorizontalPodAutoscalerList
		if err := cluster.Client.List(ctx, &list, client.InNamespace(work)); err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 1, fmt.Sprintf("%d HPAs, want 1", len(list.Items))
	})

	// The metrics server authenticates with TokenReview and authorizes with
	// SubjectAccessReview, both under the manager's role: a reader bound to
	// scaleplane-metrics-reader gets metrics, a token without it is refused.
	reader := "metrics-reader-" + strconv.Itoa(metricsPort)
	if _, err := cs.CoreV1().ServiceAccounts(work).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: reader}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: reader},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "scaleplane-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: work, Name: reader}},
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cluster.Client.Delete(context.Background(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: reader}})
	})
	get := func(path, bearer string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+metricsAddr+path, nil)
		req.Header.Set("Authorization", "Bearer "+bearer)
		// The metrics server's certificate is self-signed, as in a cluster
		// without one configured.
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback, self-signed
		resp, err := c.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	readerToken := token(work, reader)
	framework.Eventually(t, 0, func(context.Context) (bool, string) {
		code, body := get("/metrics", readerToken)
		return code == http.StatusOK && strings.Contains(body, "scaleplane_fanout_writes_total"),
			fmt.Sprintf("GET /metrics as the reader: %d %.200s", code, body)
	})
	if code, body := get("/metrics", managerCfg.BearerToken); code != http.StatusForbidden {
		t.Errorf("GET /metrics as a token without the reader role: %d %.200s, want 403", code, body)
	}

	// ScaleProfiles under the shipped role: scaleplane
	// reads them and writes their status; a kind it has no rules for is
	// RBACMissing, naming what to grant, and not served.
	gadgets := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.rbac.example.org}
spec:
  group: rbac.example.org
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
---
apiVersion: scaleplane.io/v1alpha1
kind: ScaleProfile
metadata: {name: gadgets.rbac.example.org}
spec:
  target: {apiVersion: rbac.example.org/v1, kind: Gadget, resource: gadgets}
  replicasPath: .spec.replicas
  status: {replicasPath: .status.replicas}
  scaleConfig: {annotation: scaleplane.io/scale-config}
`
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		out, err := cluster.KubectlWithInput(ctx, gadgets, "apply", "--server-side", "-f", "-")
		return err == nil, fmt.Sprintf("kubectl apply the Gadget CRD and its ScaleProfile: %v %s", err, out)
	})
	t.Cleanup(func() {
		_, _ = cluster.Kubectl(context.Background(), "delete", "sprof", "gadgets.rbac.example.org", "--ignore-not-found")
	})
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		out, err := cluster.Kubectl(ctx, "get", "sprof", "gadgets.rbac.example.org", "-o",
			`jsonpath={.status.conditions[?(@.type=="Active")].reason}: {.status.conditions[?(@.type=="Active")].message}`)
		return err == nil && strings.HasPrefix(out, "RBACMissing: ") && strings.Contains(out, "update gadgets/scale"),
			fmt.Sprintf("ScaleProfile gadgets.rbac.example.org: %v %q, want RBACMissing naming update gadgets/scale", err, out)
	})
}

func waitReady(t *testing.T, probePort int, done chan error) {
	t.Helper()
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort)
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("app stopped while starting: %v", err)
		default:
		}
		resp, err := http.Get(readyz)
		if err != nil {
			return false, fmt.Sprintf("readyz: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Sprintf("readyz: %s %s", resp.Status, body)
	})
}

// waitAdmitted waits until the API server sends RackedCluster creates
// through the webhook (it learns of configuration changes through an
// informer), using server-side dry runs that leave nothing behind.
func waitAdmitted(t *testing.T, ns string) {
	t.Helper()
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		u := rackedCluster(ns, "probe", 3, 1, 2, 4)
		if err := cluster.Client.Create(ctx, u, client.DryRunAll); err != nil {
			return false, fmt.Sprintf("dry-run create: %v", err)
		}
		m := members(t, u)
		return m[0] == 3, fmt.Sprintf("dry-run create not mutated yet: racks %v", m)
	})
}

// deleteWebhookConfigurations removes what the app created, so that a
// stopped app's webhooks (failurePolicy Fail) do not refuse the next
// test's objects.
func deleteWebhookConfigurations(t *testing.T, wc configv1alpha2.Webhook) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range []client.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: wc.MutatingConfigurationName}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: wc.ValidatingConfigurationName}},
	} {
		if err := cluster.Client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete %s: %v", obj.GetName(), err)
		}
	}
}
