// Command scaleplane runs scaleplane's admission webhooks, controllers and
// trigger autoscaler for the workload kinds its profiles name.
//
//	scaleplane --config=/etc/scaleplane/config.yaml   run in a cluster
//	scaleplane dev                                    run everything on an embedded control plane
//	scaleplane profile init --crd NAME                 print a ScaleProfile for a CRD
//	scaleplane config check -f FILE --crd FILE         check profiles against CRD files offline
//	scaleplane render webhooks|certificates            print what GitOps mode (--gitops) leaves to the repository
//	scaleplane explain NAMESPACE/RESOURCE/NAME         show what scaleplane does with a workload and why
//	scaleplane convert -f FILE                         print the scaleplane config of KEDA ScaledObjects
//	scaleplane completion bash|zsh                     print a shell completion script
//	scaleplane version                                 print version, commit and Go version
//
// Installed as kubectl-scaleplane (make build writes both names), it is the
// kubectl plugin "scaleplane": kubectl scaleplane explain NS/RESOURCE/NAME.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
)

func main() {
	if isPluginCompletion(os.Args[0]) {
		os.Exit(pluginCompletionMain(os.Args[1:]))
	}
	if isPlugin(os.Args[0]) {
		os.Exit(runPlugin(os.Args[1:]))
	}
	os.Exit(run(os.Args[1:]))
}

// pluginName is the binary's name as a kubectl plugin.
const pluginName = "kubectl-scaleplane"

// pluginCompletionName is the binary's name as kubectl's completion helper
// for the plugin: kubectl runs it for "kubectl scaleplane <TAB>".
const pluginCompletionName = "kubectl_complete-scaleplane"

func isPluginCompletion(argv0 string) bool {
	return strings.TrimSuffix(filepath.Base(argv0), ".exe") == pluginCompletionName
}

// isPlugin reports whether the binary runs as kubectl's plugin (kubectl
// runs kubectl-scaleplane with the words after "kubectl scaleplane").
func isPlugin(argv0 string) bool {
	return strings.TrimSuffix(filepath.Base(argv0), ".exe") == pluginName
}

// runPlugin is main as kubectl-scaleplane: the commands a kubectl user
// runs; never the manager, which "kubectl scaleplane" with a typo would
// otherwise start.
func runPlugin(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "explain", "completion", "version":
			return run(args)
		case "help", "-h", "--help":
			pluginUsage(os.Stdout)
			return 0
		}
		fmt.Fprintf(os.Stderr, "kubectl scaleplane: unknown command %q\n", args[0])
	}
	pluginUsage(os.Stderr)
	return 2
}

func pluginUsage(w io.Writer) {
	fmt.Fprint(w, `kubectl scaleplane shows what scaleplane does with your workloads.

Usage:
  kubectl scaleplane explain NS/RESOURCE/NAME     what sets the workload's count, and the last decisions
  kubectl scaleplane completion bash|zsh          print a shell completion script
  kubectl scaleplane version [-o json]            print the version, commit and Go version
`)
}

func run(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "dev":
			return devMain(args[1:])
		case "explain":
			return explainMain(args[1:])
		case "profile":
			return profileMain(args[1:])
		case "config":
			return configMain(args[1:])
		case "render":
			return renderMain(args[1:])
		case "cleanup":
			return cleanupMain(args[1:])
		case "convert":
			return convertMain(args[1:])
		case "completion":
			return completionMain(args[1:])
		case "version":
			return versionMain(args[1:])
		case "help", "-h", "--help":
			usage()
			return 0
		}
	}
	return serveMain(args)
}

func usage() {
	fmt.Fprint(os.Stderr, `scaleplane makes workload custom resources first-class scaled resources.

Usage:
  scaleplane [flags]                      run the webhooks, controllers and autoscaler
  scaleplane dev [flags]                  run everything on an embedded local control plane
  scaleplane dev load NS/NAME [flags]     send requests to a dev workload's sample pods
  scaleplane profile init (--crd NAME | -f FILE)  print a ScaleProfile and its RBAC for a CRD
  scaleplane config check -f FILE [--crd FILE]... check configurations and profiles against CRD files
  scaleplane render webhooks|certificates  print what --gitops leaves to your repository
  scaleplane cleanup [--delete]           list (or delete) what an uninstall leaves: HPAs, certificates, webhook configurations
  scaleplane explain NS/RESOURCE/NAME     what sets a workload's count, and the last decisions (its Scaling)
  scaleplane convert -f FILE | -n NS | -A  print the scaleplane config of KEDA ScaledObjects
  scaleplane completion bash|zsh          print a shell completion script
  scaleplane version [-o json]            print the version, commit and Go version

Run 'scaleplane <command> -h' for a command's flags.
`)
}

// signalContext ends on SIGINT or SIGTERM, so every child process and
// runnable gets a graceful stop.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func serveMain(args []string) int {
	fs := flag.NewFlagSet("scaleplane", flag.ContinueOnError)
	var (
		configPath = fs.String("config", "", "component configuration file (profiles, webhook, autoscaler); required")
		kubeconfig = fs.String("kubeconfig", "", "kubeconfig file; empty means in-cluster or $KUBECONFIG")
		opts       app.Options
		certMode   string
	)
	fs.StringVar(&opts.Namespace, "namespace", envOr("POD_NAMESPACE", "scaleplane-system"), "namespace scaleplane runs in (Secret, lease, cert-manager objects)")
	fs.StringVar(&opts.ServiceName, "webhook-service", "scaleplane-webhook-service", "Service in front of the webhook server")
	fs.StringVar(&opts.SecretName, "webhook-secret", "scaleplane-webhook-server-cert", "Secret holding the webhook's serving key pair")
	fs.StringVar(&certMode, "cert-mode", string(app.CertSelfSigned), "who issues the webhook certificate: self-signed, cert-manager or files")
	fs.StringVar(&opts.MetricsAddr, "metrics-bind-address", ":8443", "metrics and debug endpoints (HTTPS, Kubernetes authn/authz); 0 disables")
	fs.StringVar(&opts.ProbeAddr, "health-probe-bind-address", ":8081", "/healthz and /readyz; 0 disables")
	fs.BoolVar(&opts.LeaderElection, "leader-elect", false, "run controllers and the autoscaler on one replica at a time")
	bindInstallFlags(fs, &opts)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("scaleplane")
	opts.CertMode = app.CertMode(certMode)
	if err := checkObjectNames(&opts); err != nil {
		fmt.Fprintf(os.Stderr, "scaleplane: %v\n", err)
		return 2
	}

	if *configPath == "" {
		fmt.Fprintln(os.Stderr, "scaleplane: --config is required: pass the component configuration file (see config/samples/deploy/scaleplane-config.yaml)")
		return 2
	}
	cfg, warnings, err := app.LoadConfiguration(*configPath)
	for _, w := range warnings {
		fmt.Fprintf(os.Stderr, "scaleplane: warning: %s\n", w)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "scaleplane: %v\n", err)
		return 2
	}
	// The metrics and probe addresses are flags; a clash with the
	// configuration's would fail a server only once this replica leads.
	if errs := cfg.ValidateListeners(configv1alpha2.FlagListeners(opts.MetricsAddr, opts.ProbeAddr)); len(errs) > 0 {
		fmt.Fprintf(os.Stderr, "scaleplane: %v\n", errs.ToAggregate())
		return 2
	}
	opts.Config = cfg
	if opts.RestConfig, err = restConfig(*kubeconfig); err != nil {
		fmt.Fprintf(os.Stderr, "scaleplane: %v\n", err)
		return 2
	}
	a, err := app.New(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "scaleplane: %v\n", err)
		return 1
	}
	ctx, cancel := signalContext()
	defer cancel()
	log.Info("starting", "version", currentVersion().Version, "commit", currentVersion().Commit, "profiles", len(a.Views), "certMode", opts.CertMode, "gitOps", opts.GitOps)
	// The process's own soft memory limit, when GOMEMLIMIT does not set one.
	app.ApplyMemoryBudget(log, cfg, os.Getenv("GOMEMLIMIT") != "")
	if err := a.Run(ctx); err != nil {
		// A plain message, not a stack trace: the most common failures
		// (cert-manager missing, RBAC) say what to install or grant.
		fmt.Fprintf(os.Stderr, "scaleplane: %v\n", err)
		return 1
	}
	return 0
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("read kubeconfig %s: %w", kubeconfig, err)
		}
		// As ctrl.GetConfig does in a pod and with $KUBECONFIG: no
		// client-side rate limit (API Priority and Fairness applies), rather
		// than client-go's default of 5 requests/s for the whole manager.
		if cfg.QPS == 0 {
			cfg.QPS = -1
		}
		return cfg, nil
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("find the API server (set --kubeconfig or run in a cluster): %w", err)
	}
	return cfg, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
