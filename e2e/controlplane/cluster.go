package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Options says what a control plane starts with.
type Options struct {
	// CRDPaths are folders or files of CRDs to install, and CRDs are CRD
	// objects to install. With neither, the sample CRDs in config/crd/bases.
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
	// Dir keeps the data folder (kubeconfig, logs); empty means a new
	// temporary folder removed by Stop.
	Dir string
	// Out receives kube-controller-manager's output; nil discards it unless
	// SCALEPLANE_E2E_VERBOSE is set.
	Out *os.File
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

	env    *envtest.Environment
	kcm    *Process
	ownDir bool
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
	c = &Cluster{Dir: opts.Dir}
	if c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "scaleplane-e2e-"); err != nil {
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

	crdPaths := opts.CRDPaths
	if len(crdPaths) == 0 && len(opts.CRDs) == 0 {
		crdPaths = []string{filepath.Join(RepoRoot(), "config", "crd", "bases")}
	}
	c.Scheme = runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(c.Scheme); err != nil {
		return nil, fmt.Errorf("build scheme: %w", err)
	}
	if err := apiextensionsv1.AddToScheme(c.Scheme); err != nil {
		return nil, fmt.Errorf("build scheme: %w", err)
	}
	c.env = &envtest.Environment{}
	if opts.Dir != "" {
		// A data folder the caller keeps (scaleplane dev --keep) holds etcd's
		// data too, so the cluster can be inspected after exit.
		c.env.ControlPlane.Etcd = &envtest.Etcd{DataDir: filepath.Join(c.Dir, "etcd")}
	}
	*c.env = envtest.Environment{
		ControlPlane:          c.env.ControlPlane,
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
	// kubectl and kube-controller-manager are told where etcd's data is not
	// at all; envtest keeps that in its own temporary folders and removes them.
	if c.Config, err = c.env.Start(); err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
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
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	if err := os.WriteFile(c.Kubeconfig, kubeconfig, 0o600); err != nil {
		return nil, fmt.Errorf("write admin kubeconfig: %w", err)
	}
	if opts.HPAController {
		if err := c.startControllerManager(opts.Out); err != nil {
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

func (c *Cluster) startControllerManager(out *os.File) error {
	if out == nil && os.Getenv("SCALEPLANE_E2E_VERBOSE") != "" {
		out = os.Stderr
	}
	opts := ProcessOptions{
		Path: Binary(ControllerManagerBinary),
		Args: []string{
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
		},
		LogPath: filepath.Join(c.Dir, "kube-controller-manager.log"),
	}
	if out != nil {
		opts.Out = out
	}
	p, err := StartProcess(ControllerManagerBinary, opts)
	if err != nil {
		return err
	}
	c.kcm = p
	return nil
}

// Stop ends every process the cluster started and removes its data folder
// unless the caller gave one.
func (c *Cluster) Stop() error {
	var errs []error
	if c.kcm != nil {
		c.kcm.Stop(10 * time.Second)
		c.kcm = nil
	}
	if c.env != nil {
		if err := c.env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop control plane: %w", err))
		}
		c.env = nil
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
	if c.kcm == nil {
		return ""
	}
	return c.kcm.Log(0)
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
