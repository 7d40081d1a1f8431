package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	scaleplaneconfig "github.com/scaleplane/scaleplane/config"
)

// Options says what a control plane starts with.
type Options struct {
	// CRDPaths are folders or files of CRDs to install, and CRDs are CRD
	// objects to install. With neither, the sample CRDs in config/samples/crd.
	CRDPaths []string
	CRDs     []*apiextensionsv1.CustomResourceDefinition
	// HPAController starts kube-controller-manager with the
	// horizontalpodautoscaling controller, syncing every second, and the
	// garbage collector (ControllerManagerControllers).
	HPAController bool
	// Aggregator configures kube-apiserver's front proxy (request-header
	// authentication and a proxy client certificate) so that APIServices
	// such as KEDA's external.metrics.k8s.io are served through it.
	Aggregator bool
	// MutatingWebhooks and ValidatingWebhooks are installed with their
	// clientConfig pointed at a local serving address over TLS signed by a CA
	// the framework makes (see Cluster.WebhookHost, WebhookPort, WebhookCertDir).
	MutatingWebhooks   []*admissionv1.MutatingWebhookConfiguration
	ValidatingWebhooks []*admissionv1.ValidatingWebhookConfiguration
	// Dir is the data folder: etcd's data, the API server's certificates,
	// the admin kubeconfig, logs (see DirEntries). Stop leaves a folder the
	// caller gave; empty means a new temporary folder that Stop removes.
	Dir string
	// Out receives kube-controller-manager's output; nil discards it unless
	// SCALEPLANE_E2E_VERBOSE is set.
	Out *os.File
	// Scheme, when set, is the cluster's scheme (Cluster.Scheme, its Client
	// and NewManager use it): the caller's own API types, so tests read and
	// write them typed. The built-in types and apiextensions/v1 are added to
	// it. Default: a scheme of those only.
	Scheme *runtime.Scheme
	// APIServerFlags are extra kube-apiserver flags, name (without dashes)
	// to value, set over envtest's defaults: for tests that need a feature
	// of the real API server envtest leaves off (an egress selector, say).
	APIServerFlags map[string]string
	// ControllerManagerFlags are extra kube-controller-manager flags, name
	// (without dashes) to value, passed after the defaults, so they win
	// over them (--horizontal-pod-autoscaler-sync-period, --kube-api-qps):
	// for benchmarks that must not be held back by the controller
	// manager's client-side limits. Used with HPAController only.
	ControllerManagerFlags map[string]string
}

// Cluster is a running control plane.
type Cluster struct {
	// Config is an admin rest.Config.
	Config *rest.Config
	// Client is an admin client; it handles unstructured objects of any kind.
	Client client.Client
	// Scheme knows the built-in types and apiextensions.
	Scheme *runtime.Scheme
	// Kubeconfig is the path of an admin kubeconfig file for kubectl.
	Kubeconfig string
	// WebhookHost, WebhookPort and WebhookCertDir are where the installed
	// webhook configurations expect a webhook server, and the serving key pair
	// (tls.crt, tls.key) for it. CAData is the CA they trust.
	WebhookHost    string
	WebhookPort    int
	WebhookCertDir string
	CAData         []byte
	// Dir holds the kubeconfig and logs.
	Dir string

	env *envtest.Environment
	kcm *exec.Cmd
	// kcmDone is closed when kube-controller-manager has exited; its exit
	// status after our SIGTERM says nothing a test could act on.
	kcmDone chan struct{}
	ownDir  bool
	// launch starts every process of the cluster (see launcher).
	launch *launcher
	// shims are the links envtest starts etcd and kube-apiserver through.
	shims map[string]string
}

// Names of what a cluster creates in its data folder; DirEntries lists them
// for a caller that must remove exactly what was made there.
const (
	etcdFolder           = "etcd"
	apiServerFolder      = "apiserver"
	webhookServingFolder = "webhook-serving"
	kubeconfigFile       = "kubeconfig"
	controllerManagerLog = "kube-controller-manager.log"
)

// DirEntries are the names Start creates in its data folder. The folder
// also holds whatever the caller puts there.
func DirEntries() []string {
	return []string{shimFolder, etcdFolder, apiServerFolder, webhookServingFolder, kubeconfigFile, controllerManagerLog}
}

// Start brings up etcd and kube-apiserver (and kube-controller-manager when
// asked), installs CRDs and webhook configurations, and waits until they are
// served. On any failure it stops whatever it started.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	need := []string{EtcdBinary, APIServerBinary, KubectlBinary}
	if opts.HPAController {
		need = append(need, ControllerManagerBinary)
	}
	if err := CheckBinaries(need...); err != nil {
		return nil, err
	}
	c = &Cluster{Dir: opts.Dir, launch: newLauncher()}
	if c.Dir == "" {
		removeDeadTempDirs(os.TempDir())
		if c.Dir, err = os.MkdirTemp("", tempPattern); err != nil {
			c.launch.close()
			return nil, fmt.Errorf("create data folder: %w", err)
		}
		c.ownDir = true
	}
	defer func() {
		if err != nil {
			_ = c.Stop()
			c = nil
		}
	}()
	if c.ownDir {
		if err := writeOwner(c.Dir); err != nil {
			return nil, fmt.Errorf("record the data folder's owner: %w", err)
		}
	}
	if c.shims, err = writeShims(c.Dir, BinaryDir(), os.Getpid()); err != nil {
		return nil, err
	}
	// The API server's certificates and its client CA (the key that signs
	// admin credentials) are made fresh for every start, in the data folder
	// rather than a temporary folder of envtest's own: a caller that
	// removes the data folder removes every credential. envtest reuses a
	// serving certificate it finds there without the CA that signed it.
	certDir := filepath.Join(c.Dir, apiServerFolder)
	if err := os.RemoveAll(certDir); err != nil {
		return nil, fmt.Errorf("remove old API server certificates: %w", err)
	}
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, fmt.Errorf("create API server certificate folder: %w", err)
	}

	crdPaths := opts.CRDPaths
	if len(crdPaths) == 0 && len(opts.CRDs) == 0 {
		crdPaths = []string{filepath.Join(RepoRoot(), "config", "samples", "crd")}
	}
	// scaleplane's own CRDs are always there, as config/default installs
	// them: every scaleplane started on this control plane writes Scalings,
	// and ScaleProfiles apply with kubectl (scaleplane dev too).
	own, err := scaleplaneconfig.ScaleplaneCRDs()
	if err != nil {
		return nil, err
	}
	opts.CRDs = append(append([]*apiextensionsv1.CustomResourceDefinition(nil), opts.CRDs...), own...)
	c.Scheme = opts.Scheme
	if c.Scheme == nil {
		c.Scheme = runtime.NewScheme()
	}
	if err := clientgoscheme.AddToScheme(c.Scheme); err != nil {
		return nil, fmt.Errorf("build scheme: %w", err)
	}
	if err := apiextensionsv1.AddToScheme(c.Scheme); err != nil {
		return nil, fmt.Errorf("build scheme: %w", err)
	}
	c.env = &envtest.Environment{
		ControlPlane: envtest.ControlPlane{
			// A data folder the caller keeps (scaleplane dev --keep) holds
			// etcd's data too, so the cluster can be inspected after exit
			// and started again on the same data.
			Etcd:      &envtest.Etcd{Path: c.shims[EtcdBinary], DataDir: filepath.Join(c.Dir, etcdFolder)},
			APIServer: &envtest.APIServer{Path: c.shims[APIServerBinary], CertDir: certDir},
		},
		BinaryAssetsDirectory: BinaryDir(),
		CRDDirectoryPaths:     crdPaths,
		CRDs:                  opts.CRDs,
		ErrorIfCRDPathMissing: len(crdPaths) > 0,
		Scheme:                c.Scheme,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			MutatingWebhooks:   opts.MutatingWebhooks,
			ValidatingWebhooks: opts.ValidatingWebhooks,
			LocalServingHost:   "127.0.0.1",
		},
		ControlPlaneStartTimeout: 90 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	if opts.Aggregator {
		if err := c.configureFrontProxy(); err != nil {
			return nil, err
		}
	}
	// An open watch (`kubectl get -w` in another terminal, an informer)
	// would otherwise hold kube-apiserver's shutdown for its whole request
	// timeout (60 s), past ControlPlaneStopTimeout: watches are closed
	// after this grace instead.
	c.env.ControlPlane.APIServer.Configure().Set("shutdown-watch-termination-grace-period", "2s")
	for name, value := range opts.APIServerFlags {
		c.env.ControlPlane.GetAPIServer().Configure().Set(name, value)
	}
	c.launch.run(func() { c.Config, err = c.env.Start() })
	if err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	if err := c.moveWebhookCerts(); err != nil {
		return nil, err
	}
	c.Config.QPS, c.Config.Burst = 1000, 2000
	c.WebhookHost = c.env.WebhookInstallOptions.LocalServingHost
	c.WebhookPort = c.env.WebhookInstallOptions.LocalServingPort
	c.WebhookCertDir = c.env.WebhookInstallOptions.LocalServingCertDir
	c.CAData = c.env.WebhookInstallOptions.LocalServingCAData

	if c.Client, err = client.New(c.Config, client.Options{Scheme: c.Scheme}); err != nil {
		return nil, fmt.Errorf("build client: %w", err)
	}
	admin, err := c.env.AddUser(envtest.User{Name: "scaleplane-e2e-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("add admin user: %w", err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("write admin kubeconfig: %w", err)
	}
	c.Kubeconfig = filepath.Join(c.Dir, kubeconfigFile)
	if err := os.WriteFile(c.Kubeconfig, kubeconfig, 0o600); err != nil {
		return nil, fmt.Errorf("write admin kubeconfig: %w", err)
	}
	if opts.HPAController {
		c.launch.run(func() { err = c.startControllerManager(opts.Out, opts.ControllerManagerFlags) })
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

// configureFrontProxy makes a front-proxy CA and client certificate and
// passes them to kube-apiserver, as kubeadm does: the aggregator presents
// the client certificate to an extension API server, which trusts the
// X-Remote-User headers because kube-apiserver publishes the CA in
// kube-system/extension-apiserver-authentication.
func (c *Cluster) configureFrontProxy() error {
	dir := filepath.Join(c.Dir, "front-proxy")
	ca, err := NewCA("front-proxy-ca")
	if err != nil {
		return err
	}
	if err := ca.WriteKeyPair(dir, "front-proxy-client", nil, nil); err != nil {
		return fmt.Errorf("front-proxy certificates: %w", err)
	}
	if c.env.ControlPlane.APIServer == nil {
		c.env.ControlPlane.APIServer = &envtest.APIServer{}
	}
	args := c.env.ControlPlane.APIServer.Configure()
	args.Set("requestheader-client-ca-file", filepath.Join(dir, "ca.crt"))
	args.Set("requestheader-allowed-names", "front-proxy-client")
	args.Set("requestheader-username-headers", "X-Remote-User")
	args.Set("requestheader-group-headers", "X-Remote-Group")
	args.Set("requestheader-extra-headers-prefix", "X-Remote-Extra-")
	args.Set("proxy-client-cert-file", filepath.Join(dir, "tls.crt"))
	args.Set("proxy-client-key-file", filepath.Join(dir, "tls.key"))
	return nil
}

// moveWebhookCerts moves the webhook serving key pair envtest always makes
// in a temporary folder of its own into the data folder, so that nothing
// with a key outlives the data folder. (Until it is moved, during Start, a
// killed process leaves that folder behind.)
func (c *Cluster) moveWebhookCerts() error {
	opts := &c.env.WebhookInstallOptions
	from, to := opts.LocalServingCertDir, filepath.Join(c.Dir, webhookServingFolder)
	if from == "" || from == to {
		return nil
	}
	if err := os.RemoveAll(to); err != nil {
		return fmt.Errorf("remove old webhook serving certificates: %w", err)
	}
	if err := os.Mkdir(to, 0o700); err != nil {
		return fmt.Errorf("create webhook serving certificate folder: %w", err)
	}
	for _, name := range []string{"tls.crt", "tls.key"} {
		data, err := os.ReadFile(filepath.Join(from, name))
		if err != nil {
			return fmt.Errorf("move webhook serving certificates: %w", err)
		}
		if err := os.WriteFile(filepath.Join(to, name), data, 0o600); err != nil {
			return fmt.Errorf("move webhook serving certificates: %w", err)
		}
	}
	if err := os.RemoveAll(from); err != nil {
		return fmt.Errorf("remove envtest's webhook serving certificates: %w", err)
	}
	opts.LocalServingCertDir = to
	return nil
}

// Processes are the identities of the running control-plane programs
// (etcd, kube-apiserver and, when started, kube-controller-manager), for a
// caller that records them to clean up after a crash.
func (c *Cluster) Processes() ([]Process, error) {
	var argv0s []string
	for _, link := range c.shims {
		argv0s = append(argv0s, link)
	}
	procs, err := children(os.Getpid(), argv0s...)
	if err != nil {
		return nil, fmt.Errorf("list control-plane processes: %w", err)
	}
	if c.kcm != nil && c.kcm.Process != nil {
		p, err := readStarted(c.kcm.Process.Pid, c.kcm.Path, 10*time.Second)
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
	}
	return procs, nil
}

// AddUser returns a rest.Config for a user in the given groups, for tests
// that must run under a narrower role than cluster-admin.
func (c *Cluster) AddUser(name string, groups ...string) (*rest.Config, error) {
	u, err := c.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return nil, fmt.Errorf("add user %q: %w", name, err)
	}
	cfg := u.Config()
	cfg.QPS, cfg.Burst = 1000, 2000
	return cfg, nil
}

// ControllerManagerControllers are the controllers kube-controller-manager
// runs: the HPA controller, and the garbage collector, so that deleting a
// workload deletes the HPA it owns (and anything else with an owner
// reference to it) as in a cluster.
var ControllerManagerControllers = []string{"horizontalpodautoscaling", "garbagecollector"}

// extraFlags renders name-to-value flags as --name=value, sorted by name
// so that a program's command line is the same from run to run.
func extraFlags(flags map[string]string) []string {
	names := make([]string, 0, len(flags))
	for name := range flags {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]string, len(names))
	for i, name := range names {
		out[i] = "--" + name + "=" + flags[name]
	}
	return out
}

func (c *Cluster) startControllerManager(out *os.File, extra map[string]string) error {
	logPath := filepath.Join(c.Dir, controllerManagerLog)
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("create controller-manager log: %w", err)
	}
	args := []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--authentication-kubeconfig=" + c.Kubeconfig,
		"--authorization-kubeconfig=" + c.Kubeconfig,
		"--controllers=" + strings.Join(ControllerManagerControllers, ","),
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=0",
		// A short sync period lets tests observe the real HPA controller
		// acting within seconds.
		"--horizontal-pod-autoscaler-sync-period=1s",
		"--v=2",
	}
	args = append(args, extraFlags(extra)...)
	cmd := exec.Command(Binary(ControllerManagerBinary), args...)
	if out == nil && os.Getenv("SCALEPLANE_E2E_VERBOSE") != "" {
		out = os.Stderr
	}
	if out != nil {
		cmd.Stdout, cmd.Stderr = out, out
	} else {
		cmd.Stdout, cmd.Stderr = logFile, logFile
	}
	// The controller manager must not outlive the test binary or demo that
	// started it, even when that process is killed. Started on the
	// launcher's thread, as the shims are (see launcher).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start kube-controller-manager: %w", err)
	}
	c.kcm = cmd
	c.kcmDone = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(c.kcmDone)
	}()
	return nil
}

// Stop ends every process the cluster started and removes its data folder
// unless the caller gave one.
func (c *Cluster) Stop() error {
	var errs []error
	if c.kcm != nil && c.kcm.Process != nil {
		_ = c.kcm.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.kcmDone:
		case <-time.After(10 * time.Second):
			_ = c.kcm.Process.Kill()
			<-c.kcmDone
		}
		c.kcm = nil
	}
	if c.env != nil {
		if err := c.env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop control plane: %w", err))
		}
		c.env = nil
	}
	if c.launch != nil {
		c.launch.close()
		c.launch = nil
	}
	if c.ownDir && c.Dir != "" {
		if err := os.RemoveAll(c.Dir); err != nil {
			errs = append(errs, fmt.Errorf("remove data folder: %w", err))
		}
	}
	return errors.Join(errs...)
}

// ControllerManagerLog returns what kube-controller-manager has logged, for
// failure messages.
func (c *Cluster) ControllerManagerLog() string {
	data, _ := os.ReadFile(filepath.Join(c.Dir, controllerManagerLog))
	return string(data)
}

// Kubectl runs the real kubectl against the cluster and returns its standard
// output; an error carries standard error.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (string, error) {
	return c.KubectlWithInput(ctx, "", args...)
}

// KubectlWithInput is Kubectl with stdin (for `apply -f -`).
func (c *Cluster) KubectlWithInput(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, Binary(KubectlBinary), append([]string{"--kubeconfig=" + c.Kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
