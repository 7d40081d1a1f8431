package foundation

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/webhooks"
)

// reviewProxy stands between scaleplane and the API server, passing
// everything through except TokenReviews and SubjectAccessReviews while
// told to fail them, as an overloaded or unreachable API server would.
type reviewProxy struct {
	proxy                 *httputil.ReverseProxy
	failTokens, failSARs  atomic.Bool
	tokenReviews, sarSeen atomic.Int64
}

func (p *reviewProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		switch r.URL.Path {
		case "/apis/authentication.k8s.io/v1/tokenreviews":
			p.tokenReviews.Add(1)
			if p.failTokens.Load() {
				http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected: the API server is unavailable","reason":"ServiceUnavailable","code":503}`, http.StatusServiceUnavailable)
				return
			}
		case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
			p.sarSeen.Add(1)
			if p.failSARs.Load() {
				http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected: the API server is unavailable","reason":"ServiceUnavailable","code":503}`, http.StatusServiceUnavailable)
				return
			}
		}
	}
	p.proxy.ServeHTTP(w, r)
}

// startReviewProxy serves a reviewProxy to the cluster's API server over
// TLS on 127.0.0.1 and returns it with a client configuration that reaches
// the API server through it.
func startReviewProxy(t *testing.T) (*reviewProxy, *rest.Config) {
	t.Helper()
	target, err := url.Parse(cluster.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	// Credentials are the caller's, passed through: only the CA is ours.
	upstream, err := rest.TransportFor(&rest.Config{Host: cluster.Config.Host, TLSClientConfig: rest.TLSClientConfig{
		CAData: cluster.Config.CAData, CAFile: cluster.Config.CAFile, ServerName: cluster.Config.ServerName,
	}})
	if err != nil {
		t.Fatal(err)
	}
	p := &reviewProxy{proxy: &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport:     upstream,
		FlushInterval: -1, // watches stream
	}}
	srv := httptest.NewTLSServer(p)
	t.Cleanup(srv.Close)
	cfg := rest.AnonymousClientConfig(cluster.Config)
	cfg.Host = srv.URL
	cfg.TLSClientConfig = rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}
	return p, cfg
}

// TestBinaryServers runs the whole binary as the shipped
// ServiceAccount, with its API traffic through a reviewProxy, and checks
// its servers against the real kube-apiserver: the metrics server answers
// no or bogus credentials 401 (controller-runtime's filter answers 500), a caller without the
// role 403, a reader 200, and 503 while TokenReviews or
// SubjectAccessReviews fail; the activity endpoint refuses a large body
// (413) and impossible names (400); neither the webhook nor the metrics
// server negotiates HTTP/2; a review without a uid is a 400; and clients
// trickling headers to the webhook server are cut after
// servers.webhook.readHeaderTimeoutSeconds while admission goes on.
func TestBinaryServers(t *testing.T) {
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
	// into config/rbac's (empty) profiled-kinds role: applying config/rbac
	// has just emptied it again.
	if out, err := cluster.Kubectl(ctx, "apply", "-f", filepath.Join(framework.RepoRoot(), "config", "samples", "deploy", "profiled_kinds_role.yaml")); err != nil {
		t.Fatalf("apply the sample kinds' role: %v\n%s", err, out)
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
	proxy, managerCfg := startReviewProxy(t)
	managerCfg.BearerToken = token(ns, "scaleplane-controller-manager")
	managerCfg.QPS, managerCfg.Burst = 200, 400

	webhookPort, metricsPort, probePort := freePort(t), freePort(t), freePort(t)
	cfg := profile.SampleConfiguration()
	cfg.Webhook.Host = "127.0.0.1"
	cfg.Webhook.Port = webhookPort
	cfg.Webhook.CertDir = filepath.Join(t.TempDir(), "certs")
	cfg.Servers.Webhook.ReadHeaderTimeoutSeconds = 2
	metricsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(metricsPort))
	webhookAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(webhookPort))
	a, err := app.New(app.Options{
		Config:                       cfg,
		RestConfig:                   managerCfg,
		Namespace:                    ns,
		CertMode:                     app.CertSelfSigned,
		WebhookURL:                   "https://" + webhookAddr,
		WebhookIPs:                   []string{"127.0.0.1"},
		MetricsAddr:                  metricsAddr,
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
	waitReady(t, probePort, done)

	// Callers: a metrics reader, an activity writer, and a ServiceAccount
	// with neither role.
	work := cluster.Namespace(t)
	bind := func(sa, role string) string {
		if _, err := cs.CoreV1().ServiceAccounts(work).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if role != "" {
			name := work + "-" + sa
			if err := cluster.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: work, Name: sa}},
			}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = cluster.Client.Delete(context.Background(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}})
			})
		}
		return token(work, sa)
	}
	reader, writer, nobody := bind("reader", "scaleplane-metrics-reader"), bind("writer", "scaleplane-activity-writer"), bind("nobody", "")

	insecure := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // loopback, self-signed
	httpc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: insecure}}
	call := func(method, path, bearer, body string) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, "https://"+metricsAddr+path, strings.NewReader(body))
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	// RBAC bindings reach the authorizer through an informer.
	framework.Eventually(t, 0, func(context.Context) (bool, string) {
		code := call(http.MethodGet, "/metrics", reader, "")
		return code == http.StatusOK, fmt.Sprintf("GET /metrics as the reader: %d", code)
	})
	type result struct {
		Case string
		Code int
	}
	var got, want []result
	check := func(name, method, path, bearer, body string, code int) {
		got = append(got, result{name, call(method, path, bearer, body)})
		want = append(want, result{name, code})
	}
	check("no token", http.MethodGet, "/metrics", "", "", 401)
	check("bogus token", http.MethodGet, "/metrics", "bogus", "", 401)
	check("malformed JWT", http.MethodGet, "/metrics", "eyJhbGciOiJSUzI1NiJ9.e30.c2ln", "", 401)
	check("no role", http.MethodGet, "/metrics", nobody, "", 403)
	check("reader", http.MethodGet, "/metrics", reader, "", 200)
	check("activity, body too large", http.MethodPost, "/activity/"+work+"/rackedclusters/db", writer, strings.Repeat("x", 4096), 413)
	check("activity, bad namespace", http.MethodPost, "/activity/Not_A_Namespace/rackedclusters/db", writer, "", 400)
	check("activity, bad name", http.MethodPost, "/activity/"+work+"/rackedclusters/db%2F..", writer, "", 400)
	check("activity, unknown workload", http.MethodPost, "/activity/"+work+"/rackedclusters/nothing-here", writer, "", 404)
	proxy.failTokens.Store(true)
	before := proxy.tokenReviews.Load()
	// A new token, so that no cached review answers it.
	check("token review fails", http.MethodGet, "/metrics", token(work, "reader"), "", 503)
	proxy.failTokens.Store(false)
	proxy.failSARs.Store(true)
	// A path the reader was not authorized for yet, so that no cached
	// decision answers it.
	check("access review fails", http.MethodGet, "/debug/store", reader, "", 503)
	proxy.failSARs.Store(false)
	check("recovered", http.MethodGet, "/debug/store", reader, "", 200)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics server answers (-want +got):\n%s", diff)
	}
	if proxy.tokenReviews.Load() == before {
		t.Error("the failing TokenReview never reached the API server's proxy")
	}

	// HTTP/2 is offered by neither TLS server.
	for name, addr := range map[string]string{"webhook": webhookAddr, "metrics": metricsAddr} {
		if conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}); err == nil { //nolint:gosec // loopback
			t.Errorf("%s server: an h2-only client negotiated %q, want the handshake refused", name, conn.ConnectionState().NegotiatedProtocol)
			conn.Close()
		}
	}

	// A review without a uid, straight to the webhook server.
	body, _ := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  &admissionv1.AdmissionRequest{Operation: admissionv1.Create},
	})
	mutate := "https://" + webhookAddr + webhooks.MutatePath(a.Views[0].GVR())
	resp, err := httpc.Post(mutate, "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a review without request.uid: HTTP %d, want 400", resp.StatusCode)
	}

	// Clients trickling headers to the webhook server: admission goes on
	// beside them, and each is cut after the 2 s header timeout.
	var closed []chan struct{}
	for range 40 {
		conn, err := tls.Dial("tcp", webhookAddr, insecure) //nolint:gosec // loopback
		if err != nil {
			t.Fatalf("slow client: %v", err)
		}
		t.Cleanup(func() { conn.Close() })
		c := make(chan struct{})
		closed = append(closed, c)
		go func() {
			defer close(c)
			_, _ = bufio.NewReader(conn).ReadString('\n')
		}()
		go func() {
			_, _ = io.WriteString(conn, "POST "+webhooks.MutatePath(a.Views[0].GVR())+" HTTP/1.1\r\nHost: x\r\nX-Slow: ")
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-c:
					return
				case <-tick.C:
				}
				if _, err := conn.Write([]byte("a")); err != nil {
					return
				}
			}
		}()
	}
	waitAdmitted(t, work)
	for i, c := range closed {
		select {
		case <-c:
		case <-time.After(30 * time.Second):
			t.Fatalf("slow client %d still connected to the webhook server after 30 s (header timeout 2 s)", i)
		}
	}
}
