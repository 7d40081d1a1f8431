package lifecycle

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// gracePeriod is the binary's graceful-shutdown deadline (app.Options'
// default; the binary has no flag for it).
const gracePeriod = 30 * time.Second

// shutdownWorkloads is how many autoscaled workloads run when the binary is
// interrupted: well above its 4 workers per kind, so that a worker wedged
// by each deletion would leave none.
const shutdownWorkloads = 24

// TestCtrlCExitsCleanly runs the real scaleplane binary, with
// leader election as it runs in a cluster, against the control plane;
// autoscaled workloads tick every second and are being deleted when it gets
// SIGINT. It must exit 0 before its graceful-shutdown deadline, and hand
// back its lease. A worker wedged by a deletion used to make it wait out
// the whole grace period and exit 1.
func TestCtrlCExitsCleanly(t *testing.T) {
	bin := buildBinary(t)
	ns := cluster.Namespace(t)
	port := exporter(t)
	appNS := cluster.Namespace(t) // the lease's namespace
	metricsPort, probePort := framework.FreePort(t), framework.FreePort(t)
	p := startBinary(t, bin, "--config", writeConfig(t),
		"--kubeconfig", cluster.Kubeconfig,
		"--namespace", appNS,
		"--cert-mode", string(app.CertFiles),
		"--leader-elect=true",
		"--metrics-bind-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(metricsPort)),
		"--health-probe-bind-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(probePort)))
	p.awaitReady(t, "http://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(probePort))+"/readyz")
	metrics := metricsReader(t, "https://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(metricsPort))+"/metrics")

	ctx := context.Background()
	workloads := make([]workload, shutdownWorkloads)
	for i := range workloads {
		workloads[i] = workload{ns: ns, name: fmt.Sprintf("s%02d", i), port: port}
		framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
			if err := workloads[i].create(ctx); err != nil && !apierrors.IsAlreadyExists(err) {
				return false, err.Error()
			}
			return true, ""
		})
	}
	// Every one of them has been ticked by the binary: its trigger's count
	// was written through /scale.
	for _, w := range workloads {
		if err := w.awaitReplicas(ctx, autoscaledTo, framework.DefaultTimeout); err != nil {
			t.Fatalf("%v\nscaleplane output:\n%s", err, p.output())
		}
	}

	// Deletions in flight: one at a time, until every workload is gone or
	// the test ends.
	var deleted atomic.Int64
	stop := make(chan struct{})
	var deleter sync.WaitGroup
	deleter.Go(func() {
		for _, w := range workloads {
			select {
			case <-stop:
				return
			default:
			}
			if err := w.delete(ctx); err != nil {
				t.Errorf("delete: %v", err)
				return
			}
			deleted.Add(1)
		}
	})
	defer func() { close(stop); deleter.Wait() }()
	// Interrupt once the binary has reconciled as many deletions as it has
	// workers for the kind (its memory shrank by that much: a deletion's
	// reconcile forgets the workload first), so that each worker would have
	// been wedged by one, while the rest are still being deleted.
	framework.Eventually(t, framework.DefaultTimeout, func(ctx context.Context) (bool, string) {
		s, err := metrics(ctx)
		if err != nil {
			return false, err.Error()
		}
		workers := s.KindWorkers["RackedCluster"]
		return workers > 0 && s.Workloads <= shutdownWorkloads-workers,
			fmt.Sprintf("%d deleted, autoscaler: %s", deleted.Load(), s)
	})
	t.Logf("interrupting with %d of %d workloads deleted", deleted.Load(), shutdownWorkloads)

	interrupted := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// The deadline is the grace period: a process that waits it out has a
	// wedged runnable, whatever its exit code.
	select {
	case <-p.exited:
	case <-time.After(gracePeriod):
		t.Fatalf("scaleplane did not exit within its grace period of %s after SIGINT; output:\n%s", gracePeriod, p.output())
	}
	took := time.Since(interrupted)
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("scaleplane exited %d after SIGINT, want 0; output:\n%s", code, p.output())
	}
	// Released on the way out (LeaderElectionReleaseOnCancel): the next
	// replica takes over at once instead of waiting for the lease to expire.
	var lease coordinationv1.Lease
	if err := cluster.Client.Get(ctx, types.NamespacedName{Namespace: appNS, Name: app.LeaderElectionID}, &lease); err != nil {
		t.Fatalf("read the lease: %v", err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("the lease is still held by %q after exit", *h)
	}
	t.Logf("SIGINT with deletions in flight: exit code 0 after %s (grace period %s)", took.Round(time.Millisecond), gracePeriod)
}

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

// writeConfig writes appConfig as the binary reads it.
func writeConfig(t *testing.T) string {
	t.Helper()
	data, err := yaml.Marshal(appConfig())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// process is a running scaleplane binary.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	mu     sync.Mutex
	out    bytes.Buffer
}

func (p *process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *process) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func startBinary(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p, p
	// It must not outlive the test binary, even one that is killed.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start scaleplane: %v", err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() || os.Getenv("SCALEPLANE_E2E_VERBOSE") != "" {
			t.Logf("scaleplane output:\n%s", p.output())
		}
	})
	return p
}

// awaitReady waits until /readyz answers 200: caches synced, webhook server
// started.
func (p *process) awaitReady(t *testing.T, url string) {
	t.Helper()
	framework.Eventually(t, 2*framework.DefaultTimeout, func(ctx context.Context) (bool, string) {
		select {
		case <-p.exited:
			t.Fatalf("scaleplane exited while starting: %v; output:\n%s", p.cmd.ProcessState, p.output())
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Sprintf("GET %s: %d", url, resp.StatusCode)
	})
}

// metricsReader reads the binary's /metrics as a cluster's Prometheus
// would: over HTTPS with a service account token the API server
// authenticates and authorizes.
func metricsReader(t *testing.T, url string) func(context.Context) (workerState, error) {
	t.Helper()
	ctx := context.Background()
	ns := cluster.Namespace(t)
	create := func(obj client.Object) {
		if err := cluster.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
		}
	}
	name := "scaleplane-lifecycle-metrics-reader"
	create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus"}})
	create(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}},
	}})
	create(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "prometheus"}}})
	cs, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "prometheus", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	// The metrics server's certificate is self-signed, as in a cluster
	// without one configured.
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed on loopback
	return func(ctx context.Context) (workerState, error) {
		samples, err := scrape(ctx, c, url, tr.Status.Token)
		if err != nil {
			return workerState{}, err
		}
		return workersOf(samples, ""), nil
	}
}
