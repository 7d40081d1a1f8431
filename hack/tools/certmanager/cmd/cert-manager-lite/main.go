package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	apireg "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	// Controllers register themselves with controller.Register in init;
	// only the ones imported here exist in this binary.
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"

	// Issuer backends register with issuer.RegisterIssuer in init; the
	// issuers controller needs them to set an Issuer Ready.
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// controllers is the exact set started: everything a Certificate needs to be
// issued by a SelfSigned or CA issuer, and nothing that needs ACME, Vault,
// Venafi, Gateway API or Ingress.
var controllers = []string{
	"issuers",
	"clusterissuers",
	"certificates-trigger",
	"certificates-key-manager",
	"certificates-request-manager",
	"certificates-issuing",
	"certificates-readiness",
	"certificates-revision-manager",
	"certificaterequests-approver",
	"certificaterequests-issuer-selfsigned",
	"certificaterequests-issuer-ca",
}

type options struct {
	kubeconfig               string
	clusterResourceNamespace string
	readyFile                string
	workers                  int
	minBackoff, maxBackoff   time.Duration
	syncTimeout              time.Duration
}

func main() {
	fs := flag.NewFlagSet("cert-manager-lite", flag.ExitOnError)
	klog.InitFlags(fs)
	var o options
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to the kubeconfig of the cluster (required)")
	fs.StringVar(&o.clusterResourceNamespace, "cluster-resource-namespace", "kube-system", "namespace holding the Secrets of ClusterIssuers")
	fs.StringVar(&o.readyFile, "ready-file", "", "file written once every informer cache has synced, so a caller can wait for readiness")
	fs.IntVar(&o.workers, "workers", 2, "workers per controller")
	// Shorter than upstream's 1h/32h: in a test a failed request should be
	// retried while the test still runs.
	fs.DurationVar(&o.minBackoff, "certificate-request-minimum-backoff-duration", 5*time.Second, "first delay after a failed CertificateRequest")
	fs.DurationVar(&o.maxBackoff, "certificate-request-maximum-backoff-duration", time.Minute, "largest delay after failed CertificateRequests")
	fs.DurationVar(&o.syncTimeout, "cache-sync-timeout", 2*time.Minute, "how long to wait for informer caches before giving up")
	_ = fs.Parse(os.Args[1:])

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "cert-manager-lite: %v\n", err)
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func run(ctx context.Context, o options) error {
	if o.kubeconfig == "" {
		return errors.New("--kubeconfig is required")
	}
	logf.InitLogs()
	log := klog.NewKlogr()
	ctrl.SetLogger(log)
	ctx = logf.NewContext(ctx, log.WithName("cert-manager-lite"))

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig:         o.kubeconfig,
		KubernetesAPIQPS:   50,
		KubernetesAPIBurst: 100,
		IssuerOptions: controller.IssuerOptions{
			ClusterResourceNamespace: o.clusterResourceNamespace,
		},
		CertificateOptions: controller.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: o.minBackoff,
			CertificateRequestMaximumBackoffDuration: o.maxBackoff,
		},
	})
	if err != nil {
		return fmt.Errorf("build controller context: %w", err)
	}

	known := controller.Known()
	loops := make(map[string]controller.Interface, len(controllers))
	for _, name := range controllers {
		construct, ok := known[name]
		if !ok {
			return fmt.Errorf("controller %q is not registered: missing import", name)
		}
		// Constructing a controller registers its informers with the shared
		// factories, so every constructor must run before the factories start.
		loop, err := construct(factory)
		if err != nil {
			return fmt.Errorf("construct controller %q: %w", name, err)
		}
		loops[name] = loop
	}

	shared, err := factory.Build("cert-manager-lite")
	if err != nil {
		return fmt.Errorf("build shared context: %w", err)
	}

	injector, err := newInjector(ctx, o.kubeconfig)
	if err != nil {
		return err
	}

	var wg sync.WaitGroup
	errs := make(chan error, len(loops)+1)
	for name, loop := range loops {
		wg.Go(func() {
			if err := loop.Run(o.workers, ctx); err != nil {
				errs <- fmt.Errorf("controller %q: %w", name, err)
			}
		})
	}
	wg.Go(func() {
		if err := injector.Start(ctx); err != nil {
			errs <- fmt.Errorf("ca injector: %w", err)
		}
	})

	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())
	shared.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())

	if err := waitSynced(ctx, o.syncTimeout, shared, injector); err != nil {
		cancel()
		wg.Wait()
		return err
	}
	if o.readyFile != "" {
		if err := os.WriteFile(o.readyFile, []byte("ready\n"), 0o600); err != nil {
			cancel()
			wg.Wait()
			return fmt.Errorf("write ready file: %w", err)
		}
	}
	klog.InfoS("cert-manager-lite ready", "controllers", controllers)

	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	cancel()
	wg.Wait()
	return err
}

// waitSynced blocks until the informers of the cert-manager controllers and
// the injector's cache have their initial lists, which is when a caller can
// create objects and expect them to be acted on.
func waitSynced(ctx context.Context, timeout time.Duration, shared *controller.Context, injector ctrl.Manager) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for name, ok := range shared.KubeSharedInformerFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("kubernetes informer %s did not sync within %s", name, timeout)
		}
	}
	for typ, ok := range shared.SharedInformerFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("cert-manager informer %v did not sync within %s", typ, timeout)
		}
	}
	if !injector.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("ca injector cache did not sync within %s", timeout)
	}
	return nil
}

// newInjector builds the CA injector the way cert-manager's cainjector does,
// limited to the two webhook configuration kinds scaleplane owns.
func newInjector(ctx context.Context, kubeconfig string) (ctrl.Manager, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %q: %w", kubeconfig, err)
	}
	cfg.UserAgent = "cert-manager-lite-cainjector"

	scheme := runtime.NewScheme()
	utilruntime.Must(kscheme.AddToScheme(scheme))
	utilruntime.Must(cmapi.AddToScheme(scheme))
	utilruntime.Must(apiext.AddToScheme(scheme))
	utilruntime.Must(apireg.AddToScheme(scheme))

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		LeaderElection:         false,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// The injector watches Secrets as metadata only and reads the one it
		// needs directly, as upstream does, so the cache never holds keys.
		Client: client.Options{Cache: &client.CacheOptions{
			DisableFor: []client.Object{&corev1.Secret{}},
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("create ca injector manager: %w", err)
	}
	enabled := map[string]bool{}
	for _, kind := range []string{cainjector.MutatingWebhookConfigurationName, cainjector.ValidatingWebhookConfigurationName} {
		enabled[kind] = true
	}
	if err := cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor:        enabled,
	}); err != nil {
		return nil, fmt.Errorf("register ca injectors: %w", err)
	}
	return mgr, nil
}
