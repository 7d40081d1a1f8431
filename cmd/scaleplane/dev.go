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
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
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
		kubeconfig = fs.String("kubeconfig", "./scaleplane-dev.kubeconfig", "kubeconfig to add the embedded cluster to: a new file is written and removed at exit; to an existing one a scaleplane-dev cluster, user and context are added (and made current) and removed at exit")
		keep       = fs.Bool("keep", false, "keep the data folder (etcd data, logs, kubeconfig) after exit; a later start with --data-dir reuses it")
		configPath = fs.String("config", "", "component configuration; default: the three sample profiles")
		dataDir    = fs.String("data-dir", "", "data folder: a new or empty folder, or one a previous dev made; default a new temporary folder")
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
	// A closed terminal (SIGHUP) stops dev as Ctrl-C does, so it cleans
	// up; a kill it cannot catch is undone by the next start.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
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

func devLog(msg string) { fmt.Println("scaleplane dev: " + msg) }

// dev runs a control plane and scaleplane until ctx ends, then stops both
// and removes what it made. Every exit path, including a failure halfway
// through start-up, goes through the deferred stops; a kill that skips
// them (kill -9, OOM) takes the control plane with it through the
// parent-death signal (see package controlplane), and the next start
// undoes the rest from the state file in the data folder.
//
// It never deletes or overwrites what the user made: a non-empty data
// folder it did not make is refused, and a kubeconfig the user has gets
// entries added and removed again, never replaced.
func dev(ctx context.Context, o devOptions) (err error) {
	cfg := config.SampleConfiguration()
	if o.configPath != "" {
		if cfg, err = config.Load(o.configPath); err != nil {
			return err
		}
	}
	self, err := controlplane.Self()
	if err != nil {
		return fmt.Errorf("read own process: %w", err)
	}
	// Before this run adds anything: what killed runs left in their
	// temporary folders (and in kubeconfig files) goes first. A failure
	// here is reported and does not stop this run.
	if err := cleanCrashedRuns(os.TempDir(), devLog); err != nil {
		devLog(fmt.Sprintf("could not clean up after a killed run: %v", err))
	}
	folder, err := openDataFolder(o.dataDir, o.keep, self, devLog)
	if err != nil {
		return err
	}
	defer func() {
		if closeErr := folder.close(); closeErr != nil {
			err = errors.Join(err, closeErr)
		} else if o.keep {
			devLog("data kept in " + folder.path)
		}
	}()
	kc, err := readUserKubeconfig(o.kubeconfig, self)
	if err != nil {
		return err
	}

	crds, err := config.SampleCRDs()
	if err != nil {
		return err
	}
	start := time.Now()
	cp, err := controlplane.Start(ctx, controlplane.Options{CRDs: crds, HPAController: true, Dir: folder.path})
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := cp.Stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
	}()
	cpTime := time.Since(start)
	if folder.state.Processes, err = cp.Processes(); err != nil {
		return err
	}
	edit := kc.edit()
	folder.state.Kubeconfig = &edit
	if err := folder.save(); err != nil {
		return err
	}
	if err := kc.add(cp.Kubeconfig, self); err != nil {
		return err
	}
	defer func() {
		if rmErr := kc.remove(self, edit); rmErr != nil {
			err = errors.Join(err, rmErr)
		}
	}()
	if folder.previous != nil {
		if err := removeStaleWebhooks(ctx, cp.Client, folder.previous.Webhooks); err != nil {
			return err
		}
	}

	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	cfg.Webhook.Host = "127.0.0.1"
	cfg.Webhook.Port = ports[0]
	cfg.Webhook.CertDir = filepath.Join(folder.path, devCertsFolder)
	webhookURL := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	metricsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
	probeAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2]))
	// Recorded before scaleplane creates them, so a kill at any point
	// leaves none unrecorded.
	folder.state.Webhooks = &webhookRecord{URL: webhookURL, Mutating: cfg.Webhook.MutatingConfigurationName, Validating: cfg.Webhook.ValidatingConfigurationName}
	if err := folder.save(); err != nil {
		return err
	}
	a, err := app.New(app.Options{
		Config:      cfg,
		RestConfig:  cp.Config,
		CertMode:    app.CertSelfSigned,
		WebhookURL:  webhookURL,
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
	printReady(readyInfo{kubeconfig: kc, edit: edit, dataDir: folder.path, keep: o.keep, cpTime: cpTime, total: time.Since(start), metricsAddr: metricsAddr})
	select {
	case <-ctx.Done():
		devLog("stopping")
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

type readyInfo struct {
	kubeconfig    *userKubeconfig
	edit          kubeconfigEdit
	dataDir       string
	keep          bool
	cpTime, total time.Duration
	metricsAddr   string
}

func printReady(r readyInfo) {
	bin, _ := filepath.Abs(controlplane.BinaryDir())
	fmt.Printf("%s (control plane %s, total %s)\n", ReadyLine, r.cpTime.Round(time.Millisecond), r.total.Round(time.Millisecond))
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
`, r.kubeconfig.path, bin, r.metricsAddr)
	if r.edit.CreatedFile {
		fmt.Printf("Kubeconfig: %s, written for this run and removed at exit.\n", r.kubeconfig.path)
	} else {
		prev := "no context"
		if r.edit.PreviousContext != "" {
			prev = r.edit.PreviousContext
		}
		fmt.Printf("Kubeconfig: %s is yours: cluster, user and context %s were added to it and the context made current; at exit they are removed and %s is current again.\n", r.kubeconfig.path, devKubeconfigName, prev)
	}
	if r.keep {
		fmt.Printf("Data folder: %s (etcd data, credentials, logs), kept at exit (--keep).\n", r.dataDir)
	} else {
		fmt.Printf("Data folder: %s (etcd data, credentials, logs), removed at exit (keep it with --keep).\n", r.dataDir)
	}
	fmt.Println("Press Ctrl-C to stop.")
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
