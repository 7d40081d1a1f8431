package hostile

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
)

// The memory the binary runs within, for the whole suite.
//
// memoryLimit is half the Deployment's limit (config/manager: 512Mi), so
// that surviving the suite leaves the shipped limit a factor of two.
//
// goMemLimit is Go's soft limit (GOMEMLIMIT), at about 80% of the hard
// limit: the Go heap is most of what the cgroup is charged, but not all of
// it (goroutine stacks and runtime metadata outside the limit's accounting,
// the binary's mapped pages, page cache of files it reads), so the garbage
// collector works harder from 200 MiB on while ~56 MiB stay for the rest,
// before the kernel's OOM killer would act at the hard limit. The
// Deployment should set GOMEMLIMIT the same way (about 80% of its limit).
//
// storeBudget is the embedded store's byte budget (metrics.maxStoreBytes):
// half the default too, as the default is sized for the Deployment's 512
// MiB (docs/profiles.md). Every other limit is the shipped default.
const (
	memoryLimit = 256 << 20
	goMemLimit  = "200MiB"
	storeBudget = configv1alpha2.DefaultMaxStoreBytes / 2
)

// binary is the scaleplane binary under test, running in its cgroup.
type binary struct {
	// path is the built binary, which the offline commands run too.
	path   string
	cmd    *exec.Cmd
	pid    int
	exited chan struct{}
	out    *tailBuffer

	cgroup      *memoryCgroup
	probeURL    string
	metricsBase string
	webhookAddr string
}

// buildBinary builds ./cmd/scaleplane as a release would, without the race
// detector or coverage, so the memory measured is the product's.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "scaleplane")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = framework.BinaryModuleDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build scaleplane: %v\n%s", err, out)
	}
	return bin
}

// binaryConfig is the component configuration the binary reads: every
// profile of the suite, the webhook served where the framework's
// configurations point, ticks every second and scrapes every two, so that
// targets are tried many times during the suite, and the store's byte
// budget scaled to the memory limit (storeBudget). Everything else, limits
// included, is the shipped default.
func binaryConfig() *configv1alpha2.Configuration {
	cfg := profile.SampleConfiguration()
	cfg.Profiles = profiles()
	cfg.Webhook.Host = cluster.WebhookHost
	cfg.Webhook.Port = cluster.WebhookPort
	cfg.Webhook.CertDir = cluster.WebhookCertDir
	cfg.Autoscaler.PollingIntervalSeconds = 1
	cfg.Metrics.ScrapeIntervalSeconds = 2
	cfg.Metrics.MaxStoreBytes = storeBudget
	return cfg
}

// binarySettings are what a test may change of the binary's start: its
// configuration, and GOMEMLIMIT ("" leaves it unset).
type binarySettings struct {
	cfg        *configv1alpha2.Configuration
	goMemLimit string
}

// binaryOption changes binarySettings.
type binaryOption func(*binarySettings)

// startBinary builds and starts the binary inside a new memory cgroup and
// waits until it is ready: with binaryConfig and GOMEMLIMIT=goMemLimit,
// unless opts change them.
func startBinary(t *testing.T, ns string, opts ...binaryOption) *binary {
	t.Helper()
	set := binarySettings{cfg: binaryConfig(), goMemLimit: goMemLimit}
	for _, o := range opts {
		o(&set)
	}
	bin := buildBinary(t)
	cg := newMemoryCgroup(t, memoryLimit)
	data, err := yaml.Marshal(set.cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// scaleplane runs in a namespace of its own: its webhooks never reach
	// the namespace it runs in (webhook.excludedNamespaces), and the
	// suite's workloads live in ns.
	sys := ns + "-scaleplane"
	if err := cluster.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sys}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	metricsPort, probePort := freePorts(t)
	b := &binary{
		path:        bin,
		exited:      make(chan struct{}),
		out:         &tailBuffer{max: 1 << 20},
		cgroup:      cg,
		probeURL:    "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(probePort)) + "/readyz",
		metricsBase: "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(metricsPort)),
		webhookAddr: net.JoinHostPort(cluster.WebhookHost, strconv.Itoa(cluster.WebhookPort)),
	}
	// The shell joins the cgroup, then becomes the binary (exec keeps the
	// pid, the cgroup and the parent-death signal): every byte the binary
	// ever allocates is charged to the cgroup.
	b.cmd = exec.Command("/bin/sh", "-c", `echo $$ > "$0" && exec "$@"`, cg.procsFile(), bin,
		"--config", cfgPath,
		"--kubeconfig", cluster.Kubeconfig,
		"--namespace", sys,
		"--cert-mode", string(app.CertFiles),
		"--metrics-bind-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(metricsPort)),
		"--health-probe-bind-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(probePort)))
	b.cmd.Env = os.Environ()
	if set.goMemLimit != "" {
		b.cmd.Env = append(b.cmd.Env, "GOMEMLIMIT="+set.goMemLimit)
	} else {
		b.cmd.Env = slices.DeleteFunc(b.cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "GOMEMLIMIT=") })
	}
	b.cmd.Stdout, b.cmd.Stderr = b.out, b.out
	// It must not outlive the test binary, even one that is killed.
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start scaleplane: %v", err)
	}
	b.pid = b.cmd.Process.Pid
	go func() {
		_ = b.cmd.Wait()
		close(b.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-b.exited:
		default:
			_ = b.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-b.exited:
			case <-time.After(40 * time.Second):
				_ = b.cmd.Process.Kill()
				<-b.exited
			}
		}
		if t.Failed() || os.Getenv("SCALEPLANE_E2E_VERBOSE") != "" {
			t.Logf("scaleplane output (last %d bytes):\n%s", b.out.max, b.out.String())
		}
	})
	framework.Eventually(t, 2*framework.DefaultTimeout, func(ctx context.Context) (bool, string) {
		if err := b.alive(); err != nil {
			t.Fatalf("%v; output:\n%s", err, b.out.String())
		}
		err := b.ready(ctx)
		return err == nil, fmt.Sprint(err)
	})
	return b
}

// freePorts are two free loopback ports for the metrics and probe servers,
// other than the webhook port the framework chose: nothing listens on that
// one until the binary does, so the kernel may offer it again.
func freePorts(t *testing.T) (int, int) {
	t.Helper()
	taken := map[int]bool{cluster.WebhookPort: true}
	var ports []int
	for len(ports) < 2 {
		p := framework.FreePort(t)
		if !taken[p] {
			taken[p] = true
			ports = append(ports, p)
		}
	}
	return ports[0], ports[1]
}

// alive fails once the process has exited: it is never restarted, so an
// exit is a restart a Deployment would have made.
func (b *binary) alive() error {
	select {
	case <-b.exited:
		return fmt.Errorf("scaleplane (pid %d) exited: %v", b.pid, b.cmd.ProcessState)
	default:
		return nil
	}
}

func (b *binary) ready(ctx context.Context) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.probeURL, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", b.probeURL, resp.StatusCode, body)
	}
	return nil
}

// memory is the cgroup's account and the process's peak RSS.
func (b *binary) memory() (memoryStats, int64, error) {
	s, err := b.cgroup.stats()
	if err != nil {
		return s, 0, err
	}
	hwm, err := vmHWM(b.pid)
	return s, hwm, err
}

// tailBuffer keeps the last max bytes written to it: the binary logs every
// refused input, and only the end matters when it fails.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *tailBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if over := len(w.b) - w.max; over > 0 {
		w.b = append(w.b[:0], w.b[over:]...)
	}
	return len(p), nil
}

func (w *tailBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}

// callerToken is a ServiceAccount token allowed what a Prometheus, a
// `scaleplane explain` user and an activity hook are together: GET and
// POST on /metrics, /debug/* and /activity/*.
func callerToken(t *testing.T, ns string) string {
	t.Helper()
	ctx := context.Background()
	name := "scaleplane-hostile-caller-" + ns
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "caller"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
			{NonResourceURLs: []string{"/metrics", "/debug/*", "/activity/*"}, Verbs: []string{"get", "post"}},
		}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "caller"}}},
	} {
		if err := cluster.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
		}
		t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), obj) })
	}
	cs, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "caller",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	return tr.Status.Token
}

// webhookTLS trusts the CA the framework signed the webhook serving
// certificate with: raw reviews reach the server exactly as the API
// server's do.
func webhookTLS(t *testing.T) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cluster.CAData) {
		t.Fatal("the framework's webhook CA holds no PEM certificate")
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
}

// canary is the invariant checked after every group of inputs: a valid
// RackedCluster create is mutated (M5: every rack at replicas) and allowed.
func canary(ctx context.Context, ns string, n int) error {
	u := framework.RackedCluster(ns, fmt.Sprintf("canary-%03d", n), 3, 1, 2, 4)
	if err := cluster.Client.Create(ctx, u); err != nil {
		return fmt.Errorf("create a valid RackedCluster: %w", err)
	}
	m, err := framework.RackMembers(u)
	if err != nil {
		return err
	}
	if diff := cmp.Diff([]int64{3, 3, 3}, m); diff != "" {
		return fmt.Errorf("a valid RackedCluster was not mutated: racks (-want +got):\n%s", diff)
	}
	return nil
}
