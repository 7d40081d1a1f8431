package failover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/e2e/framework"
)

// systemNamespace is where the shipped manifests put scaleplane.
const systemNamespace = "scaleplane-system"

// The shipped Deployment's pod shape: the grace it gives on termination
// (terminationGracePeriodSeconds) and the Service port that leads to the
// pods' webhook port.
const (
	terminationGrace = 40 * time.Second
	servicePort      = 443
)

// deployment is what a Deployment of the shipped manifests gives each
// pod: the binary, its ServiceAccount's credentials and the component
// configuration.
type deployment struct {
	bin        string
	kubeconfig string
	config     *configv1alpha2.Configuration
	dir        string
}

// replica is one running pod of the deployment.
type replica struct {
	name                                string // pod name = hostname = lease identity prefix
	webhookPort, probePort, metricsPort int
	cmd                                 *exec.Cmd
	logPath                             string
	exited                              chan struct{}
	exitErr                             error
}

// deploy builds the binary, installs the shipped RBAC, webhook Service and
// webhook configurations, and writes what each pod needs.
func deploy(t *testing.T) *deployment {
	t.Helper()
	ctx := context.Background()
	d := &deployment{dir: t.TempDir()}
	d.bin = filepath.Join(d.dir, "scaleplane")
	build := exec.Command("go", "build", "-o", d.bin, ".")
	build.Dir = framework.BinaryModuleDir()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build scaleplane: %v\n%s", err, out)
	}

	if err := cluster.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace: %v", err)
	}
	for _, dir := range []string{"rbac", "webhook"} {
		if out, err := cluster.Kubectl(ctx, "apply", "-k", filepath.Join(framework.RepoRoot(), "config", dir)); err != nil {
			t.Fatalf("apply config/%s: %v\n%s", dir, err, out)
		}
	}
	// config/default's role for profiled kinds is empty; the sample
	// deployment fills it for the sample kinds, as config/samples/deploy does.
	if out, err := cluster.Kubectl(ctx, "apply", "-f", filepath.Join(framework.RepoRoot(), "config", "samples", "deploy", "profiled_kinds_role.yaml")); err != nil {
		t.Fatalf("apply the sample kinds' role: %v\n%s", err, out)
	}
	// The configurations fail closed; once the replicas are gone they
	// would refuse every RackedCluster write of later tests.
	t.Cleanup(func() {
		for _, obj := range []client.Object{
			&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: configv1alpha2.DefaultMutatingConfigurationName}},
			&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: configv1alpha2.DefaultValidatingConfigurationName}},
		} {
			if err := cluster.Client.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s: %v", obj.GetName(), err)
			}
		}
	})

	cs, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(systemNamespace).CreateToken(ctx, "scaleplane-controller-manager", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for the ServiceAccount: %v", err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cluster.Config.Host, CertificateAuthorityData: cluster.Config.CAData}
	kc.AuthInfos["scaleplane"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "scaleplane", Namespace: systemNamespace}
	kc.CurrentContext = "e2e"
	d.kubeconfig = filepath.Join(d.dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, d.kubeconfig); err != nil {
		t.Fatalf("write kubeconfig: %v", err)
	}

	if d.config, _, err = app.LoadConfiguration(filepath.Join(framework.RepoRoot(), "config", "samples", "deploy", "scaleplane-config.yaml")); err != nil {
		t.Fatalf("the sample deployment's configuration: %v", err)
	}
	return d
}

// start runs one pod: the binary with the Deployment's arguments, in a UTS
// namespace named after the pod, on loopback ports of its own.
func (d *deployment) start(t *testing.T, name string) *replica {
	t.Helper()
	r := &replica{
		name:        name,
		webhookPort: framework.FreePort(t),
		probePort:   framework.FreePort(t),
		metricsPort: framework.FreePort(t),
		logPath:     filepath.Join(d.dir, name+".log"),
		exited:      make(chan struct{}),
	}
	cfg := *d.config
	cfg.Webhook.Host = "127.0.0.1"
	cfg.Webhook.Port = r.webhookPort
	cfg.Webhook.CertDir = filepath.Join(d.dir, name, "serving-certs") // the pod's emptyDir
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(d.dir, name+"-config.json")
	if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(r.logPath)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(self,
		"--config="+cfgPath,
		"--leader-elect",
		"--cert-mode=self-signed",
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(r.metricsPort),
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(r.probePort),
	)
	// In a pod the API server is found in-cluster; KUBECONFIG takes the
	// same code path (controller-runtime's GetConfig), --kubeconfig would not.
	r.cmd.Env = append(os.Environ(),
		podNameEnv+"="+name, execEnv+"="+d.bin,
		"KUBECONFIG="+d.kubeconfig, "POD_NAMESPACE="+systemNamespace)
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	r.cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUTS,
		Pdeathsig:  syscall.SIGKILL, // never outlive the test
		Setpgid:    true,
	}
	if err := r.cmd.Start(); err != nil {
		logFile.Close()
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("a replica needs a UTS namespace of its own (its pod name as hostname, for the lease identity), which needs CAP_SYS_ADMIN: %v", err)
		}
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		r.exitErr = r.cmd.Wait()
		logFile.Close()
		close(r.exited)
	}()
	network.AddEndpoint(name, r.webhookPort, r.probePort)
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("%s did not stop cleanly on SIGTERM: %v", r.name, err)
		}
		if t.Failed() {
			t.Logf("last lines of %s's log:\n%s", r.name, tail(r.logPath, 40))
		}
	})
	return r
}

// readiness returns the replica's verbose /readyz answer, for messages.
func (r *replica) readiness() string {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz?verbose", r.probePort))
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return strings.TrimSpace(string(body))
}

// running reports whether the process is still alive.
func (r *replica) running() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL: no shutdown code runs, the lease is not released,
// connections are torn down by the kernel.
func (r *replica) kill() error {
	return syscall.Kill(r.cmd.Process.Pid, syscall.SIGKILL)
}

// stop terminates the pod as the kubelet does: SIGTERM, then SIGKILL after
// the grace period. It returns why the process did not exit 0 on SIGTERM.
func (r *replica) stop() error {
	if !r.running() {
		return nil // killed by the test, or already reported
	}
	_ = syscall.Kill(r.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-r.exited:
		return r.exitErr
	case <-time.After(terminationGrace):
		_ = r.kill()
		<-r.exited
		return fmt.Errorf("still running %s after SIGTERM, killed", terminationGrace)
	}
}

// leaseHolder returns the pod holding the leader lease and the lease.
func leaseHolder(ctx context.Context) (string, *coordinationv1.Lease, error) {
	lease := &coordinationv1.Lease{}
	if err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: app.LeaderElectionID}, lease); err != nil {
		return "", nil, err
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		// controller-runtime's identity is <hostname>_<uuid>.
		holder, _, _ = strings.Cut(*lease.Spec.HolderIdentity, "_")
	}
	return holder, lease, nil
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// startReady points the Service stand-in at the shipped webhook Service's
// clusterIP, starts a replica per name and waits until every one is an
// endpoint. Start-up on a loaded machine (two binaries, one API server) is
// slow; only a replica that exits is a failure here.
func (d *deployment) startReady(t *testing.T, names ...string) map[string]*replica {
	t.Helper()
	svc := &corev1.Service{}
	if err := cluster.Client.Get(context.Background(), client.ObjectKey{Namespace: systemNamespace, Name: "scaleplane-webhook-service"}, svc); err != nil {
		t.Fatalf("the shipped webhook Service: %v", err)
	}
	network.SetClusterIP(svc.Spec.ClusterIP, servicePort)
	pods := map[string]*replica{}
	for _, name := range names {
		pods[name] = d.start(t, name)
	}
	framework.Eventually(t, 3*framework.DefaultTimeout, func(context.Context) (bool, string) {
		var waiting []string
		for _, r := range pods {
			if !r.running() {
				t.Fatalf("%s exited while starting: %v\n%s", r.name, r.exitErr, tail(r.logPath, 40))
			}
			if !network.Ready(r.name) {
				waiting = append(waiting, r.name+": "+r.readiness())
			}
		}
		return len(waiting) == 0, fmt.Sprintf("not ready: %v", waiting)
	})
	return pods
}
