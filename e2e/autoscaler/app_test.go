package autoscaler

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
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

	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
)

// appNamespace is where the app keeps its lease and webhook Secret, and
// where the test callers' service accounts live.
const appNamespace = "scaleplane-autoscaler-e2e"

// env is the running app and how to call its metrics server.
type env struct {
	metricsURL string
	http       *http.Client
	// token may post /activity/* and get /debug/*; nobody's token is valid
	// but allowed nothing.
	token, nobody string
}

// startApp runs the binary's own wiring (app.New) with a 1 s polling and
// scrape interval, outside dev mode: the metrics
// server is HTTPS behind TokenReview and SubjectAccessReview, as in a
// cluster.
func startApp(t *testing.T) *env {
	t.Helper()
	webhookPort, metricsPort := freePort(t), freePort(t)
	cfg := profile.SampleConfiguration()
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
	e := &env{
		metricsURL: "https://" + metricsAddr,
		// The metrics server's certificate is self-signed, as in a cluster
		// without one configured; `scaleplane explain` has the same flag.
		http: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}, //nolint:gosec // self-signed on loopback
	}
	e.token, e.nobody = callerTokens(t)
	return e
}

// callerTokens creates two service accounts and returns their tokens: one
// bound to a ClusterRole allowing the autoscaler's non-resource URLs, one
// bound to nothing.
func callerTokens(t *testing.T) (allowed, nobody string) {
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
	create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: appNamespace, Name: "nobody"}})
	// What a gateway and a person running `scaleplane explain` need.
	create(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "scaleplane-e2e-autoscaler-caller"}, Rules: []rbacv1.PolicyRule{
		{NonResourceURLs: []string{"/activity/*"}, Verbs: []string{"post"}},
		{NonResourceURLs: []string{"/debug/*"}, Verbs: []string{"get"}},
	}})
	create(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "scaleplane-e2e-autoscaler-caller"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "scaleplane-e2e-autoscaler-caller"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: appNamespace, Name: "gateway"}}})
	cs, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	token := func(sa string) string {
		tr, err := cs.CoreV1().ServiceAccounts(appNamespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token for %s: %v", sa, err)
		}
		return tr.Status.Token
	}
	return token("gateway"), token("nobody")
}

// call sends method to path on the metrics server with token and returns
// the status and body.
func (e *env) call(ctx context.Context, method, path, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, method, e.metricsURL+path, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.http.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), err
}

// explain reads GET /debug/autoscaler/{ns}/rackedclusters/{name}.
func (e *env) explain(ctx context.Context, ns, name string) (autoscaler.Explanation, error) {
	var out autoscaler.Explanation
	status, body, err := e.call(ctx, http.MethodGet, autoscaler.ExplainPath+ns+"/rackedclusters/"+name, e.token)
	if err != nil {
		return out, err
	}
	if status != http.StatusOK {
		return out, fmt.Errorf("explain: %d %s", status, body)
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		return out, fmt.Errorf("decode explanation: %w", err)
	}
	return out, nil
}

func freePort(t *testing.T) int { return framework.FreePort(t) }
