//go:build !nodev

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/config"
	"github.com/scaleplane/scaleplane/e2e/controlplane"
)

// ReadyLine is what `scaleplane dev` prints once everything answers; scripts
// and tests wait for it.
const ReadyLine = "scaleplane dev: ready"

func devMain(args []string) int {
	fs := flag.NewFlagSet("scaleplane dev", flag.ContinueOnError)
	var (
		kubeconfig = fs.String("kubeconfig", "./scaleplane-dev.kubeconfig", "where to write the kubeconfig of the embedded cluster")
		keep       = fs.Bool("keep", false, "keep the data folder (etcd data, logs, kubeconfig) after exit")
		configPath = fs.String("config", "", "component configuration; default: the three sample profiles")
		dataDir    = fs.String("data-dir", "", "data folder; default a new temporary folder")
	)
	zapOpts := zap.Options{Development: true}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	ctx, cancel := signalContext()
	defer cancel()
	if err := dev(ctx, devOptions{kubeconfig: *kubeconfig, keep: *keep, configPath: *configPath, dataDir: *dataDir}); err != nil {
		fmt.Fprintf(os.Stderr, "scaleplane dev: %v\n", err)
		return 1
	}
	return 0
}

type devOptions struct {
	kubeconfig, configPath, dataDir string
	keep                            bool
}

// dev runs a control plane and scaleplane until ctx ends, then stops both
// and removes what it made. Every exit path, including a failure halfway
// through start-up, goes through the deferred stops: no etcd,
// kube-apiserver or kube-controller-manager outlives it.
func dev(ctx context.Context, o devOptions) (err error) {
	cfg := config.SampleConfiguration()
	if o.configPath != "" {
		if cfg, err = config.Load(o.configPath); err != nil {
			return err
		}
	}
	dir := o.dataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "scaleplane-dev-"); err != nil {
			return fmt.Errorf("create data folder: %w", err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create data folder: %w", err)
	}
	defer func() {
		if o.keep {
			fmt.Printf("scaleplane dev: data kept in %s\n", dir)
			return
		}
		_ = os.RemoveAll(dir)
		_ = os.Remove(o.kubeconfig)
	}()

	crds, err := config.SampleCRDs()
	if err != nil {
		return err
	}
	start := time.Now()
	cp, err := controlplane.Start(ctx, controlplane.Options{CRDs: crds, HPAController: true, Dir: dir})
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := cp.Stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
	}()
	cpTime := time.Since(start)
	data, err := os.ReadFile(cp.Kubeconfig)
	if err != nil {
		return fmt.Errorf("read kubeconfig: %w", err)
	}
	if err := os.WriteFile(o.kubeconfig, data, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}

	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	cfg.Webhook.Host = "127.0.0.1"
	cfg.Webhook.Port = ports[0]
	cfg.Webhook.CertDir = filepath.Join(dir, "certs")
	metricsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
	probeAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2]))
	a, err := app.New(app.Options{
		Config:      cfg,
		RestConfig:  cp.Config,
		CertMode:    app.CertSelfSigned,
		WebhookURL:  "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
		WebhookIPs:  []string{"127.0.0.1"},
		MetricsAddr: metricsAddr,
		ProbeAddr:   probeAddr,
		Dev:         true,
	})
	if err != nil {
		return err
	}
	runCtx, stopApp := context.WithCancel(ctx)
	appDone := make(chan error, 1)
	go func() { appDone <- a.Run(runCtx) }()
	defer func() {
		stopApp()
		// A failure already reported through err is not repeated.
		if runErr := <-appDone; runErr != nil && !errors.Is(runErr, context.Canceled) && err == nil {
			err = runErr
		}
	}()
	if err := waitReady(ctx, "http://"+probeAddr+"/readyz", appDone); err != nil {
		return err
	}
	printReady(o.kubeconfig, cpTime, time.Since(start), metricsAddr)
	select {
	case <-ctx.Done():
		fmt.Println("scaleplane dev: stopping")
		return nil
	case err := <-appDone:
		appDone <- err // for the deferred wait
		return fmt.Errorf("scaleplane stopped: %w", err)
	}
}

func waitReady(ctx context.Context, url string, appDone chan error) error {
	// Each probe is bounded: a freed port can be taken by a process that
	// accepts and never answers, and a probe must not outlive its tick.
	probe := &http.Client{Timeout: time.Second}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-appDone:
			appDone <- err
			return false, fmt.Errorf("scaleplane stopped while starting: %w", err)
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := probe.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("wait for scaleplane to be ready: %w", err)
	}
	return nil
}

func printReady(kubeconfig string, cpTime, total time.Duration, metricsAddr string) {
	abs, _ := filepath.Abs(kubeconfig)
	bin, _ := filepath.Abs(controlplane.BinaryDir())
	fmt.Printf("%s (control plane %s, total %s)\n", ReadyLine, cpTime.Round(time.Millisecond), total.Round(time.Millisecond))
	fmt.Printf(`
In another terminal, from the repository root:
  $ export KUBECONFIG=%s PATH=%s:$PATH
  $ kubectl apply -f config/samples/rackedcluster.yaml
  $ kubectl get rcl demo -o jsonpath='{.spec.racks[*].members} {.spec.scaleConfig}{"\n"}'
  $ kubectl scale rcl/demo --replicas=5
  $ kubectl get rcl demo -o jsonpath='{.spec.racks[*].members}{"\n"}'
  $ kubectl apply -f config/samples/rackedcluster-autoscaled.yaml
  $ kubectl get hpa
  $ kubectl apply -f config/samples/function.yaml -f config/samples/workergroup.yaml
  $ kubectl get rcl,fn,wg
  $ kubectl apply -f config/samples/invalid-rackedcluster.yaml   # refused: every field path is named
Debug endpoints: http://%s/debug/store
Press Ctrl-C to stop; everything is removed (keep it with --keep).
`, abs, bin, metricsAddr)
}

// freePorts asks the kernel for n free loopback ports.
func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
