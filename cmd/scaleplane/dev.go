//go:build !nodev

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/certs"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/devworld"
	"github.com/scaleplane/scaleplane/config"
	"github.com/scaleplane/scaleplane/controlplane"
	"github.com/scaleplane/scaleplane/profile"
)

// ReadyLine is what `scaleplane dev` prints once everything answers; scripts
// and tests wait for it.
const ReadyLine = "scaleplane dev: ready"

func devMain(args []string) int {
	if len(args) > 0 && args[0] == "load" {
		return devLoadMain(args[1:])
	}
	fs := flag.NewFlagSet("scaleplane dev", flag.ContinueOnError)
	var (
		kubeconfig = fs.String("kubeconfig", devDefaultKubeconfig, "kubeconfig to add the embedded cluster to: a new file is written and removed at exit; to an existing one a scaleplane-dev cluster, user and context are added (and made current) and removed at exit")
		keep       = fs.Bool("keep", false, "keep the data folder (etcd data, logs, kubeconfig) after exit; a later start with --data-dir reuses it")
		configPath = fs.String("config", "", "component configuration; default: the three sample profiles")
		dataDir    = fs.String("data-dir", "", "data folder: a new or empty folder, or one a previous dev made; default a new temporary folder")
		verbose    bool
		crdFiles   repeated
	)
	fs.Var(&crdFiles, "crd", "a file (or folder) of CRDs to install (server-side apply, so CRDs over 256 KiB install) before scaleplane starts, for your own kinds' profiles in --config; repeatable")
	fs.BoolVar(&verbose, "v", false, "also print controller-runtime's logs here (they always go to "+devLogFile+" in the data folder)")
	fs.BoolVar(&verbose, "verbose", false, "same as -v")
	zapOpts := zap.Options{Development: true}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	// A closed terminal (SIGHUP) stops dev as Ctrl-C does, so it cleans
	// up; a kill it cannot catch is undone by the next start.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer cancel()
	if err := dev(ctx, devOptions{kubeconfig: *kubeconfig, keep: *keep, configPath: *configPath, dataDir: *dataDir, verbose: verbose, zap: &zapOpts, crdFiles: crdFiles}); err != nil {
		fmt.Fprintf(os.Stderr, "scaleplane dev: %v\n", err)
		return 1
	}
	return 0
}

type devOptions struct {
	kubeconfig, configPath, dataDir string
	keep, verbose                   bool
	zap                             *zap.Options
	// crdFiles are --crd: CRDs to install besides the samples'.
	crdFiles []string
}

// devDefaultKubeconfig is the kubeconfig dev writes when not told another;
// `scaleplane dev load` reads it too when $KUBECONFIG is not set.
const devDefaultKubeconfig = "./scaleplane-dev.kubeconfig"

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
	cfg := profile.SampleConfiguration()
	if o.configPath != "" {
		var warnings []string
		cfg, warnings, err = app.LoadConfiguration(o.configPath)
		for _, w := range warnings {
			devLog("warning: " + w)
		}
		if err != nil {
			return err
		}
	}
	// Read before anything starts, so a bad file costs nothing.
	userCRDs, err := readDevCRDs(o.crdFiles)
	if err != nil {
		return err
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
	logPath, err := devLogger(folder.path, o.verbose, o.zap)
	if err != nil {
		return err
	}
	kc, err := readUserKubeconfig(o.kubeconfig, self)
	if err != nil {
		return err
	}
	term := newTerminal(os.Stdout, time.Now())
	// Last: what is queued is printed after everything else has stopped.
	defer term.stop()

	crds, err := config.SampleCRDs()
	if err != nil {
		return err
	}
	start := time.Now()
	devLog("starting the control plane: etcd, kube-apiserver, kube-controller-manager")
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
	devLog(fmt.Sprintf("control plane up in %s", cpTime.Round(100*time.Millisecond)))
	if folder.state.Processes, err = cp.Processes(); err != nil {
		return err
	}
	// The ports are chosen before the kubeconfig is written: its context
	// records the metrics address for `scaleplane dev load`.
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	kc.server = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
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
	if len(userCRDs) > 0 {
		if err := applyCRDs(ctx, cp.Client, userCRDs, time.Minute); err != nil {
			return err
		}
		devLog(fmt.Sprintf("installed %d CRD(s) from --crd", len(userCRDs)))
	}
	if folder.previous != nil {
		if err := removeStaleWebhooks(ctx, cp.Client, folder.previous.Webhooks); err != nil {
			return err
		}
	}

	cfg.Webhook.Host = "127.0.0.1"
	cfg.Webhook.Port = ports[0]
	cfg.Webhook.CertDir = filepath.Join(folder.path, devCertsFolder)
	webhookURL := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	metricsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
	probeAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2]))
	// A configuration's external scaler on a port dev just picked.
	if errs := cfg.ValidateListeners(configv1alpha2.FlagListeners(metricsAddr, probeAddr)); len(errs) > 0 {
		return fmt.Errorf("the configuration's addresses and dev's: %w", errs.ToAggregate())
	}
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
		// The terminal's lines: refusals from the webhooks, activity from
		// the metrics server.
		OnAdmission:      term.admission,
		OnMetricsRequest: term.metricsRequest,
	})
	if err != nil {
		return err
	}
	// The sample pods: dev plays the sample kinds' operators and the
	// kubelet. Only here; the in-cluster path never builds a World.
	world, err := devworld.New(devworld.Options{RestConfig: cp.Config, Kinds: devworld.SampleKinds(cfg.Profiles), Notify: term.pods})
	if err != nil {
		return err
	}
	runCtx, stopApp := context.WithCancel(ctx)
	appDone := make(chan error, 1)
	devLog("starting scaleplane: webhook certificate, webhook configurations, informer caches")
	go func() { appDone <- a.Run(runCtx) }()
	defer func() {
		stopApp()
		// A failure already reported through err is not repeated.
		if runErr := <-appDone; runErr != nil && !errors.Is(runErr, context.Canceled) && err == nil {
			err = runErr
		}
	}()
	worldDone := make(chan error, 1)
	go func() { worldDone <- world.Start(runCtx) }()
	defer func() {
		stopApp()
		// Every pod's server is stopped when Start returns.
		if wErr := <-worldDone; wErr != nil && !errors.Is(wErr, context.Canceled) && err == nil {
			err = fmt.Errorf("sample pods: %w", wErr)
		}
	}()
	if err := waitReady(ctx, "http://"+probeAddr, appDone); err != nil {
		return err
	}
	if err := term.watchEvents(runCtx, cp.Config); err != nil {
		return err
	}
	exe, _ := os.Executable()
	plugin, err := linkPlugin(folder.path, exe)
	if err != nil {
		devLog("kubectl scaleplane is not available in this run: " + err.Error())
	}
	printReady(os.Stdout, readyInfo{kubeconfig: kc.path, createdKubeconfig: edit.CreatedFile, previousContext: edit.PreviousContext,
		dataDir: folder.path, keep: o.keep, cpTime: cpTime, total: time.Since(start), metricsAddr: metricsAddr,
		controlPlaneBin: controlplane.BinaryDir(), executable: exe, pluginDir: plugin, logPath: logPath})
	term.start()
	select {
	case <-ctx.Done():
		devLog("stopping")
		return nil
	case err := <-appDone:
		appDone <- err // for the deferred wait
		return fmt.Errorf("scaleplane stopped: %w", err)
	case err := <-worldDone:
		worldDone <- err // for the deferred wait
		return fmt.Errorf("sample pods stopped: %w", err)
	}
}

// readyChecks are scaleplane's readiness checks, in the order they
// usually pass, with what each means to a person waiting.
var readyChecks = []struct{ name, done string }{
	{certs.ReadyzName, "webhook certificate in place"},
	{"webhook", "webhook server serving"},
	{"informers", "informer caches synced"},
}

// waitReady polls the probe server until /readyz passes, printing each
// check the first time it passes.
func waitReady(ctx context.Context, probeBase string, appDone chan error) error {
	// Each probe is bounded: a freed port can be taken by a process that
	// accepts and never answers, and a probe must not outlive its tick.
	probe := &http.Client{Timeout: time.Second}
	ok := func(ctx context.Context, path string) bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, probeBase+path, nil)
		resp, err := probe.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	passed := map[string]bool{}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-appDone:
			appDone <- err
			return false, fmt.Errorf("scaleplane stopped while starting: %w", err)
		default:
		}
		for _, c := range readyChecks {
			if !passed[c.name] && ok(ctx, "/readyz/"+c.name) {
				passed[c.name] = true
				devLog("  " + c.done)
			}
		}
		return ok(ctx, "/readyz"), nil
	})
	if err != nil {
		return fmt.Errorf("wait for scaleplane to be ready: %w", err)
	}
	return nil
}

type readyInfo struct {
	kubeconfig        string
	createdKubeconfig bool
	previousContext   string
	dataDir           string
	keep              bool
	cpTime, total     time.Duration
	metricsAddr       string
	controlPlaneBin   string
	executable        string
	pluginDir         string
	logPath           string
}

// printReady prints the ready line and the walkthrough: commands a person
// pastes into another terminal, each with what it shows. e2e/demo runs
// every line that starts with "$ " and checks what it says.
func printReady(out io.Writer, r readyInfo) {
	bin, _ := filepath.Abs(r.controlPlaneBin)
	path := bin
	// scaleplane itself (for `scaleplane dev load` and `explain`), also
	// when `go run` built it in a temporary folder.
	if exeDir := filepath.Dir(r.executable); r.executable != "" && exeDir != bin {
		path += ":" + exeDir
	}
	// kubectl-scaleplane, for kubectl scaleplane explain.
	if r.pluginDir != "" {
		path += ":" + r.pluginDir
	}
	fmt.Fprintf(out, "%s (control plane %s, total %s)\n", ReadyLine, r.cpTime.Round(time.Millisecond), r.total.Round(time.Millisecond))
	fmt.Fprintf(out, `
In another terminal, from the repository root:
  $ export KUBECONFIG=%s PATH=%s:$PATH SCALEPLANE_SERVER=http://%s

Defaults, fan-out to racks, the built-in HPA and admission:
  $ kubectl apply -f config/samples/rackedcluster.yaml
  $ kubectl get rcl demo -o jsonpath='{.spec.racks[*].members} {.spec.scaleConfig}{"\n"}'
  $ kubectl scale rcl/demo --replicas=5
  $ kubectl get rcl demo -o jsonpath='{.spec.racks[*].members}{"\n"}'
  $ kubectl apply -f config/samples/rackedcluster-autoscaled.yaml
  $ kubectl get hpa
  $ kubectl apply -f config/samples/function.yaml -f config/samples/workergroup.yaml
  $ kubectl get rcl,spfn,wg,pods
  $ kubectl apply -f config/samples/invalid-rackedcluster.yaml   # refused: every field path is named

Autoscaling on requests per second, to zero and back (about two minutes):
  $ kubectl apply -f config/samples/rackedcluster-promql.yaml    # starts at 0 replicas: no pods, nothing to scrape
  $ kubectl get rcl web -w &                                     # a row per change: REPLICAS rises, READY follows (kill %%1 ends it)
  $ scaleplane dev load default/web --rps 35 --duration 60s      # wakes it (POST /activity), then 4 members per rack
  $ kubectl wait rcl/web --for=jsonpath='{.spec.replicas}'=0 --timeout=3m   # no requests for 30 s: back to 0, pods stopped
  $ curl -sX POST $SCALEPLANE_SERVER/activity/default/rackedclusters/web   # activity wakes it to 1
  $ kubectl get scalings -A                                      # a Scaling per workload: who sets its count, and why
  $ kubectl scaleplane explain default/rackedclusters/web        # each decision and why (also: scaleplane explain)
This terminal prints each step as it happens. Debug endpoints: http://%s/debug/store
`, r.kubeconfig, path, r.metricsAddr, r.metricsAddr)
	if r.createdKubeconfig {
		fmt.Fprintf(out, "Kubeconfig: %s, written for this run and removed at exit.\n", r.kubeconfig)
	} else {
		prev := "no context"
		if r.previousContext != "" {
			prev = r.previousContext
		}
		fmt.Fprintf(out, "Kubeconfig: %s is yours: cluster, user and context %s were added to it and the context made current; at exit they are removed and %s is current again.\n", r.kubeconfig, devKubeconfigName, prev)
	}
	if r.keep {
		fmt.Fprintf(out, "Data folder: %s (etcd data, credentials, logs), kept at exit (--keep).\n", r.dataDir)
	} else {
		fmt.Fprintf(out, "Data folder: %s (etcd data, credentials, logs), removed at exit (keep it with --keep).\n", r.dataDir)
	}
	fmt.Fprintf(out, "Logs: %s (-v prints them here too).\n", r.logPath)
	fmt.Fprintln(out, "Press Ctrl-C to stop.")
}

// devLogger sends controller-runtime's (and client-go's) logs to
// devLogFile in the data folder, and to stderr too when verbose, so that
// the terminal shows what happens rather than every reconcile.
func devLogger(folder string, verbose bool, opts *zap.Options) (string, error) {
	path := filepath.Join(folder, devLogFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", fmt.Errorf("open log file: %w", err)
	}
	// The file stays open for the life of the process: writers may log
	// until the very end.
	var w io.Writer = f
	if verbose {
		w = io.MultiWriter(f, os.Stderr)
	}
	o := *opts
	o.DestWriter = w
	logger := zap.New(zap.UseFlagOptions(&o))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger.WithName("klog"))
	return path, nil
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

// devPluginFolder holds the kubectl-scaleplane link in a data folder.
const devPluginFolder = "plugin"

// linkPlugin makes the running binary available as kubectl-scaleplane in
// the run's data folder (removed with it), so that the walkthrough's
// kubectl scaleplane works also from go run. It returns the folder.
func linkPlugin(dataDir, exe string) (string, error) {
	if exe == "" {
		return "", errors.New("the running binary's path is unknown")
	}
	dir := filepath.Join(dataDir, devPluginFolder)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	link := filepath.Join(dir, pluginName)
	_ = os.Remove(link) // ours: a previous run with --keep
	if err := os.Symlink(exe, link); err != nil {
		return "", fmt.Errorf("link %s: %w", link, err)
	}
	return dir, nil
}
