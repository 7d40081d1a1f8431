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
	// PollSeconds is the autoscaler's polling and scrape interval.
	PollSeconds int32
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
	cfg.Metrics.ScrapeIntervalSeconds = s.PollSeconds
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
	return a.Run(ctx)
}

// scaleplaneChild is a running scaleplane child process.
type scaleplaneChild struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string
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
	c := &scaleplaneChild{log: filepath.Join(s.Dir, "scaleplane.log"), done: make(chan struct{})}
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
