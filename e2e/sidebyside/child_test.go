package sidebyside

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
)

// childVar, when set, makes the test binary run scaleplane alone (the
// whole app, as the scaleplane binary runs it) with the settings it holds,
// until SIGTERM: a process of its own, whose CPU and memory /proc tells
// apart from the benchmark's driver.
const childVar = "SCALEPLANE_SIDE_BY_SIDE_CHILD"

// childSettings is what the parent passes its scaleplane child.
type childSettings struct {
	Kubeconfig    string
	Dir           string
	PrometheusURL string
	// Workloads sizes the per-namespace fairness bounds: every benchmark
	// workload lives in one namespace.
	Workloads int
	// PollSeconds is the autoscaler's polling interval, ScrapeSeconds its
	// scraper's.
	PollSeconds, ScrapeSeconds int32
}

func runChild() int {
	// Errors only, to the log file the parent reads on failure.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	var s childSettings
	if err := json.Unmarshal([]byte(os.Getenv(childVar)), &s); err != nil {
		fmt.Fprintf(os.Stderr, "scaleplane child: %s: %v\n", childVar, err)
		return 2
	}
	if err := serveChild(s); err != nil {
		fmt.Fprintf(os.Stderr, "scaleplane child: %v\n", err)
		return 1
	}
	return 0
}

func serveChild(s childSettings) error {
	rc, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		return err
	}
	// As the binary does with --kubeconfig (cmd/scaleplane's
	// restConfig): no client-side rate limit.
	if rc.QPS == 0 {
		rc.QPS = -1
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg := profile.SampleConfiguration()
	cfg.Webhook.Host = "127.0.0.1"
	cfg.Webhook.Port = port
	cfg.Webhook.CertDir = filepath.Join(s.Dir, "certs")
	cfg.Autoscaler.PollingIntervalSeconds = s.PollSeconds
	cfg.Metrics.ScrapeIntervalSeconds = s.ScrapeSeconds
	cfg.Autoscaler.PrometheusURL = s.PrometheusURL
	// Every workload of the benchmark is in one namespace: the
	// per-namespace shares (meant for many tenants) are the whole.
	f := &cfg.Autoscaler.Fairness
	f.EvaluationSlotsPerNamespace = f.EvaluationSlots
	f.MaxWaitingPerNamespace = max(f.MaxWaitingPerNamespace, 2*s.Workloads)
	f.EvalSecondsPerMinute = max(f.EvalSecondsPerMinute, 600)
	m := &cfg.Metrics
	m.MaxSeriesPerNamespace = m.MaxSeries
	m.MaxStoreBytesPerNamespace = m.MaxStoreBytes
	a, err := app.New(app.Options{
		Config:      cfg,
		RestConfig:  rc,
		CertMode:    app.CertSelfSigned,
		Namespace:   "scaleplane-sidebyside",
		WebhookURL:  "https://127.0.0.1:" + strconv.Itoa(port),
		WebhookIPs:  []string{"127.0.0.1"},
		MetricsAddr: "0",
		ProbeAddr:   "0",
	})
	if err != nil {
		return fmt.Errorf("build app: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go writeHeapProfiles(ctx, filepath.Join(s.Dir, "heap.pprof"))
	go writeCPUProfiles(ctx, filepath.Join(s.Dir, "cpu.pprof"))
	return a.Run(ctx)
}

// writeHeapProfiles writes the child's heap profile to file on every
// SIGUSR1: what scaleplane keeps in memory, for the parent to read while
// the state it measures is still held.
func writeHeapProfiles(ctx context.Context, file string) {
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	for {
		select {
		case <-ctx.Done():
			return
		case <-usr1:
		}
		runtime.GC()
		tmp := file + ".tmp"
		f, err := os.Create(tmp)
		if err != nil {
			fmt.Fprintf(os.Stderr, "scaleplane child: heap profile: %v\n", err)
			continue
		}
		err = pprof.WriteHeapProfile(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, file)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "scaleplane child: heap profile: %v\n", err)
		}
	}
}

// cpuProfileFor is how long the child profiles its CPU on SIGUSR2.
const cpuProfileFor = 30 * time.Second

// writeCPUProfiles profiles the child's CPU for cpuProfileFor on every
// SIGUSR2 and writes the profile to file: where scaleplane's time goes
// in the window the parent picks.
func writeCPUProfiles(ctx context.Context, file string) {
	usr2 := make(chan os.Signal, 1)
	signal.Notify(usr2, syscall.SIGUSR2)
	defer signal.Stop(usr2)
	for {
		select {
		case <-ctx.Done():
			return
		case <-usr2:
		}
		tmp := file + ".tmp"
		f, err := os.Create(tmp)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "scaleplane child: CPU profile: %v\n", err)
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(cpuProfileFor):
		}
		pprof.StopCPUProfile()
		err = f.Close()
		if err == nil {
			err = os.Rename(tmp, file)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "scaleplane child: CPU profile: %v\n", err)
		}
	}
}

// startCPUProfile asks the child to profile its CPU for cpuProfileFor.
func (c *scaleplaneChild) startCPUProfile(t *testing.T) {
	t.Helper()
	_ = os.Remove(filepath.Join(c.dir, "cpu.pprof"))
	if err := c.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
}

// copyCPUProfile waits for the profile startCPUProfile asked for and
// copies it to dst.
func (c *scaleplaneChild) copyCPUProfile(t *testing.T, dst string) {
	t.Helper()
	src := filepath.Join(c.dir, "cpu.pprof")
	framework.Eventually(t, 2*cpuProfileFor, func(context.Context) (bool, string) {
		_, err := os.Stat(src)
		return err == nil, "the child has not written its CPU profile"
	})
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("CPU profile at rest written to %s", dst)
}

// heapProfile asks the child for its heap profile and copies it to dst.
func (c *scaleplaneChild) heapProfile(t *testing.T, dst string) {
	t.Helper()
	src := filepath.Join(c.dir, "heap.pprof")
	_ = os.Remove(src)
	if err := c.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, time.Minute, func(context.Context) (bool, string) {
		_, err := os.Stat(src)
		return err == nil, "the child has not written its heap profile"
	})
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// scaleplaneChild is a running scaleplane child process.
type scaleplaneChild struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string
	dir  string
}

// startScaleplane runs scaleplane in a child process of the test binary;
// it ends with the test (SIGTERM, then PDEATHSIG if the test dies).
func startScaleplane(t *testing.T, name string, s childSettings) *scaleplaneChild {
	t.Helper()
	s.Kubeconfig = cluster.Kubeconfig
	s.Dir = filepath.Join(cluster.Dir, name)
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	c := &scaleplaneChild{log: filepath.Join(s.Dir, "scaleplane.log"), dir: s.Dir, done: make(chan struct{})}
	logFile, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(), childVar+"="+string(data))
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = c.cmd.Wait()
		logFile.Close()
		close(c.done)
	}()
	t.Cleanup(c.stop)
	return c
}

func (c *scaleplaneChild) pid() int { return c.cmd.Process.Pid }

func (c *scaleplaneChild) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop ends the child: SIGTERM, then SIGKILL after 20 s.
func (c *scaleplaneChild) stop() {
	if c.exited() {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(20 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// logTail is the end of the child's log, for failure messages.
func (c *scaleplaneChild) logTail() string {
	data, _ := os.ReadFile(c.log)
	if len(data) > 3000 {
		data = data[len(data)-3000:]
	}
	return string(data)
}

var _ = framework.DefaultTimeout
