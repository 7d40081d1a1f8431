package deployments

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/controlplane"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

const appNamespace = "scaleplane-deployments-e2e"

// Profiles of the two built-in kinds: Deployments read as SlimFaas
// functions, StatefulSets with scaleplane's JSON annotation.
var (
	deploymentProfile = v1alpha1.ScaleProfileSpec{
		Target:      v1alpha1.TargetKind{APIVersion: "apps/v1", Kind: "Deployment", Resource: "deployments"},
		ScaleConfig: v1alpha1.ScaleConfigLocation{Annotation: scaling.SlimFaasFunction, Format: v1alpha1.ScaleConfigFormatSlimFaas},
	}
	statefulSetProfile = v1alpha1.ScaleProfileSpec{
		Target:      v1alpha1.TargetKind{APIVersion: "apps/v1", Kind: "StatefulSet", Resource: "statefulsets"},
		ScaleConfig: v1alpha1.ScaleConfigLocation{Annotation: "scaleplane.io/scale-config"},
	}
)

type env struct {
	metricsURL string
	http       *http.Client
	token      string
}

// startApp runs the binary's wiring (app.New) with the two profiles, a 1 s
// polling and scrape interval.
func startApp(t *testing.T) *env {
	t.Helper()
	webhookPort, metricsPort := framework.FreePort(t), framework.FreePort(t)
	cfg := profile.SampleConfiguration()
	cfg.Profiles = []v1alpha1.ScaleProfileSpec{deploymentProfile, statefulSetProfile}
	cfg.Webhook.Host = "127.0.0.1"
	cfg.Webhook.Port = webhookPort
	cfg.Webhook.CertDir = filepath.Join(t.TempDir(), "certs")
	cfg.Autoscaler.PollingIntervalSeconds = 1
	cfg.Metrics.ScrapeIntervalSeconds = 1
	metricsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(metricsPort))
	a, err := app.New(app.Options{
		Config:      cfg,
		RestConfig:  cluster.Config,
		CertMode:    app.CertSelfSigned,
		Namespace:   appNamespace,
		WebhookURL:  "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(webhookPort)),
		WebhookIPs:  []string{"127.0.0.1"},
		MetricsAddr: metricsAddr,
		ProbeAddr:   "0",
	})
	if err != nil {
		t.Fatalf("build app: %v", err)
	}
	framework.RunApp(t, a)
	return &env{
		metricsURL: "https://" + metricsAddr,
		http:       &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}, //nolint:gosec // self-signed on loopback
		token:      gatewayToken(t),
	}
}

// gatewayToken is the token of a service account allowed to post activity.
func gatewayToken(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	c := cluster.Client
	create := func(obj client.Object) {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
		}
	}
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appNamespace}})
	create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: appNamespace, Name: "gateway"}})
	create(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "scaleplane-e2e-deployments-gateway"}, Rules: []rbacv1.PolicyRule{
		{NonResourceURLs: []string{"/activity/*"}, Verbs: []string{"post"}},
	}})
	create(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "scaleplane-e2e-deployments-gateway"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "scaleplane-e2e-deployments-gateway"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: appNamespace, Name: "gateway"}}})
	cs, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(appNamespace).CreateToken(ctx, "gateway", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	return tr.Status.Token
}

// post sends POST path to the metrics server as the gateway.
func (e *env) post(t *testing.T, path string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.metricsURL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
	}
}

// kubectlPlugin runs the real kubectl with kubectl-scaleplane (scaleplane
// built under that name) first on PATH.
func kubectlPlugin(t *testing.T, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-scaleplane"), ".")
	build.Dir = framework.BinaryModuleDir()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build kubectl-scaleplane: %v\n%s", err, out)
	}
	kubectl := controlplane.Binary(controlplane.KubectlBinary)
	cmd := exec.Command(kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig, "PATH="+dir+string(os.PathListSeparator)+filepath.Dir(kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
