package demo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

// The walkthrough `scaleplane dev` prints, run line by line as a
// person pastes it, each outcome checked; and the terminal it prints while
// that happens.

// terminalLog collects dev's output after the banner, while commands run.
type terminalLog struct {
	mu    sync.Mutex
	lines []string
	done  chan struct{}
}

func (p *devProcess) follow() *terminalLog {
	l := &terminalLog{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for line := range p.lines {
			l.mu.Lock()
			l.lines = append(l.lines, line)
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *terminalLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// stepLine is one printed command: what to run, and whether it is left
// running in the background (a trailing &).
type stepLine struct {
	cmd        string
	background bool
}

// commands reads the "$ " lines of the printed walkthrough.
func commands(printed []string) (exports string, steps []stepLine) {
	for _, line := range printed {
		cmdline, ok := strings.CutPrefix(strings.TrimSpace(line), "$ ")
		if !ok {
			continue
		}
		if strings.HasPrefix(cmdline, "export ") {
			exports = cmdline
			continue
		}
		bare := cmdline
		if i := strings.Index(bare, "  #"); i >= 0 {
			bare = strings.TrimSpace(bare[:i])
		}
		if rest, ok := strings.CutSuffix(bare, "&"); ok {
			steps = append(steps, stepLine{cmd: strings.TrimSpace(rest), background: true})
			continue
		}
		steps = append(steps, stepLine{cmd: cmdline})
	}
	return exports, steps
}

// rcl is what the test reads of a RackedCluster.
type rcl struct {
	replicas int64
	members  []int64
	status   *int64
	pods     int
	ready    int
}

func (r rcl) String() string {
	st := "unset"
	if r.status != nil {
		st = strconv.FormatInt(*r.status, 10)
	}
	return fmt.Sprintf("spec.replicas %d, racks %v, status.replicas %s, pods %d (%d ready)", r.replicas, r.members, st, r.pods, r.ready)
}

// followed: every rack has the replicas, and status.replicas says they are
// all ready.
func (r rcl) settled() bool {
	if r.status == nil || *r.status != r.replicas || r.pods != 3*int(r.replicas) || r.ready != r.pods {
		return false
	}
	for _, m := range r.members {
		if m != r.replicas {
			return false
		}
	}
	return len(r.members) == 3
}

func readRCL(ctx context.Context, c client.Client, name string) (rcl, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("samples.scaleplane.io/v1alpha1")
	u.SetKind("RackedCluster")
	if err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: name}, u); err != nil {
		return rcl{}, err
	}
	var r rcl
	r.replicas, _, _ = unstructured.NestedInt64(u.Object, "spec", "replicas")
	racks, _, _ := unstructured.NestedSlice(u.Object, "spec", "racks")
	for _, item := range racks {
		m, _ := item.(map[string]any)["members"].(int64)
		r.members = append(r.members, m)
	}
	if n, ok, _ := unstructured.NestedInt64(u.Object, "status", "replicas"); ok {
		r.status = &n
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels{"samples.scaleplane.io/cluster": name}); err != nil {
		return rcl{}, err
	}
	r.pods = len(pods.Items)
	for _, p := range pods.Items {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				r.ready++
			}
		}
	}
	return r, nil
}

// walk runs the printed commands and checks each one's outcome.
type walk struct {
	t       *testing.T
	exports string
	c       client.Client
	start   time.Time
	bg      []*exec.Cmd
	bgOut   []*bytes.Buffer
	stopBG  context.CancelFunc
	bgCtx   context.Context
}

func (w *walk) logf(format string, args ...any) {
	w.t.Helper()
	w.t.Logf("[%6.1fs] %s", time.Since(w.start).Seconds(), fmt.Sprintf(format, args...))
}

func (w *walk) shell(ctx context.Context, cmdline string) *exec.Cmd {
	sh := exec.CommandContext(ctx, "bash", "-c", w.exports+"\n"+cmdline)
	sh.Dir = framework.RepoRoot()
	return sh
}

// once runs a command once, with a deadline, and returns its output.
func (w *walk) once(cmdline string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := w.shell(ctx, cmdline).CombinedOutput()
	return string(out), err
}

// untilOK runs a command until check accepts its output: an HPA or a
// webhook may take a moment after the previous command.
func (w *walk) untilOK(cmdline string, check func(out string, err error) (bool, string)) string {
	w.t.Helper()
	var out string
	framework.Eventually(w.t, 60*time.Second, func(ctx context.Context) (bool, string) {
		b, err := w.shell(ctx, cmdline).CombinedOutput()
		out = string(b)
		return check(out, err)
	})
	return out
}

func ok(cmdline string) func(string, error) (bool, string) {
	return func(out string, err error) (bool, string) {
		return err == nil, fmt.Sprintf("%q failed: %v\n%s", cmdline, err, out)
	}
}

// waitRCL waits for a RackedCluster to satisfy cond.
func (w *walk) waitRCL(name string, timeout time.Duration, what string, cond func(rcl) bool) rcl {
	w.t.Helper()
	var last rcl
	framework.Eventually(w.t, timeout, func(ctx context.Context) (bool, string) {
		r, err := readRCL(ctx, w.c, name)
		if err != nil {
			return false, err.Error()
		}
		last = r
		return cond(r), fmt.Sprintf("%s %s: %s", name, what, r)
	})
	return last
}

// run runs one printed step and checks what it is meant to show.
func (w *walk) run(s stepLine) {
	t := w.t
	t.Helper()
	cmd := s.cmd
	w.logf("$ %s", cmd)
	switch {
	case s.background:
		var buf bytes.Buffer
		sh := w.shell(w.bgCtx, cmd)
		sh.Stdout, sh.Stderr = &buf, &buf
		if err := sh.Start(); err != nil {
			t.Fatalf("start %q: %v", cmd, err)
		}
		w.bg, w.bgOut = append(w.bg, sh), append(w.bgOut, &buf)

	case strings.Contains(cmd, "# refused"):
		out := w.untilOK(cmd, func(out string, err error) (bool, string) {
			return err != nil && strings.Contains(out, "spec.scaleConfig.minReplicas"), fmt.Sprintf("%q was not refused with field paths: %v\n%s", cmd, err, out)
		})
		w.logf("%s", out)

	case strings.Contains(cmd, "get hpa"):
		w.logf("%s", w.untilOK(cmd, func(out string, err error) (bool, string) {
			return err == nil && strings.Contains(out, "autoscaled"), fmt.Sprintf("%q shows no HPA for autoscaled yet:\n%s", cmd, out)
		}))

	case strings.Contains(cmd, "racks[*].members}{"):
		w.logf("%s", w.untilOK(cmd, func(out string, err error) (bool, string) {
			return strings.TrimSpace(out) == "5 5 5", fmt.Sprintf("%q printed %q, want 5 5 5", cmd, out)
		}))

	case strings.Contains(cmd, "get rcl,spfn,wg,pods"):
		// Dev's sample pods: one per rack member, the Function's runtime
		// Deployment's, the WorkerGroup's leaders; all Running.
		w.logf("%s", w.untilOK(cmd, func(out string, err error) (bool, string) {
			for _, pod := range []string{"pod/demo-c-4", "pod/autoscaled-b-1", "pod/hello-0", "pod/inference-1"} {
				if !regexp.MustCompile(regexp.QuoteMeta(pod) + `\s+1/1\s+Running`).MatchString(out) {
					return false, fmt.Sprintf("%q: %s not Running and ready yet:\n%s", cmd, pod, out)
				}
			}
			return err == nil, fmt.Sprintf("%q failed: %v", cmd, err)
		}))

	case strings.Contains(cmd, "rackedcluster-promql.yaml"):
		w.logf("%s", w.untilOK(cmd, ok(cmd)))
		// It sits at zero: no pods, nothing to scrape, no activity.
		r := w.waitRCL("web", 30*time.Second, "at zero", func(r rcl) bool { return r.settled() && r.replicas == 0 })
		w.logf("web: %s", r)

	case strings.Contains(cmd, "dev load"):
		w.load(cmd)

	case strings.Contains(cmd, "kubectl wait"):
		out, err := w.once(cmd, 4*time.Minute)
		if err != nil {
			t.Fatalf("%q: %v\n%s", cmd, err, out)
		}
		w.logf("%s", out)
		r := w.waitRCL("web", 30*time.Second, "at zero, its pods gone", func(r rcl) bool { return r.settled() && r.replicas == 0 })
		w.logf("web: %s", r)

	case strings.Contains(cmd, "/activity/"):
		out, err := w.once(cmd, time.Minute)
		if err != nil || !strings.Contains(out, `"state": "Autoscaling"`) {
			t.Fatalf("%q: %v\n%s", cmd, err, out)
		}
		w.logf("%s", out)
		r := w.waitRCL("web", 60*time.Second, "awake at 1, racks ready", func(r rcl) bool { return r.settled() && r.replicas == 1 })
		w.logf("web: %s", r)

	case strings.Contains(cmd, "get scalings"):
		// A Scaling per sample workload, web autoscaled by triggers.
		w.logf("%s", w.untilOK(cmd, func(out string, err error) (bool, string) {
			for _, want := range []string{"TARGET", "MODE", "LAST SCALE", "RackedCluster/web", "triggers", "RackedCluster/autoscaled", "hpa", "Function/hello", "WorkerGroup/inference"} {
				if !strings.Contains(out, want) {
					return false, fmt.Sprintf("%q lacks %q (err %v):\n%s", cmd, want, err, out)
				}
			}
			return err == nil, fmt.Sprintf("%q failed: %v", cmd, err)
		}))

	case strings.Contains(cmd, "explain"):
		// The Scaling follows the decisions within its write budget (a few
		// seconds): wait for the last ones.
		out := w.untilOK(cmd, func(out string, err error) (bool, string) {
			for _, action := range []string{"WakeUp", "ScaleUp", "ScaleToZero"} {
				if !strings.Contains(out, action) {
					return false, fmt.Sprintf("%q shows no %s decision (err %v):\n%s", cmd, action, err, out)
				}
			}
			return err == nil, fmt.Sprintf("%q failed: %v", cmd, err)
		})
		w.logf("%s", out)

	default:
		w.logf("%s", w.untilOK(cmd, ok(cmd)))
	}
}

// load runs the printed load command and watches the workload meanwhile:
// it must wake, reach at least 3 replicas, every rack must follow, and
// status.replicas must say they are all ready.
func (w *walk) load(cmd string) {
	t := w.t
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var seen []string
	var best rcl
	settledAt3 := false
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		last := ""
		for ctx.Err() == nil {
			r, err := readRCL(ctx, w.c, "web")
			if err == nil {
				mu.Lock()
				if s := r.String(); s != last {
					seen = append(seen, fmt.Sprintf("+%.1fs %s", time.Since(w.start).Seconds(), s))
					last = s
				}
				if r.replicas > best.replicas {
					best = r
				}
				if r.replicas >= 3 && r.settled() {
					settledAt3 = true
				}
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	// As from a new terminal that did not export SCALEPLANE_SERVER: the
	// load finds the running dev's metrics address on its kubeconfig
	// context, or the workload, at zero, would never wake.
	out, err := w.once("unset SCALEPLANE_SERVER\n"+cmd, 3*time.Minute)
	cancel()
	<-watched
	w.logf("%s", out)
	mu.Lock()
	defer mu.Unlock()
	w.logf("web while loaded:\n%s", strings.Join(seen, "\n"))
	if err != nil {
		t.Fatalf("%q: %v\n%s", cmd, err, out)
	}
	if best.replicas < 3 {
		t.Errorf("under load web reached %d replicas, want at least 3", best.replicas)
	}
	if !settledAt3 {
		t.Errorf("under load web never had every rack at its replicas (>= 3) with status.replicas set; seen:\n%s", strings.Join(seen, "\n"))
	}
	m := regexp.MustCompile(`(\d+) sent, \d+ while no pod was ready; (\d+) answered, (\d+) errors`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no summary line in the load command's output:\n%s", out)
	}
	sent, _ := strconv.Atoi(m[1])
	answered, _ := strconv.Atoi(m[2])
	if sent < 100 || answered < sent*99/100 {
		t.Errorf("load: %d sent, %d answered; want most of them answered", sent, answered)
	}
}

// stopBackground ends the commands left running (kill %1) and returns
// their output.
func (w *walk) stopBackground() []string {
	w.stopBG()
	var out []string
	for i, sh := range w.bg {
		_ = sh.Wait()
		out = append(out, w.bgOut[i].String())
	}
	return out
}

func newWalk(t *testing.T, exports, kubeconfig string) *walk {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(rc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := &walk{t: t, exports: exports, c: c, start: time.Now()}
	w.bgCtx, w.stopBG = context.WithCancel(context.Background())
	t.Cleanup(func() { w.stopBG() })
	return w
}

// checkWatch: the background `kubectl get rcl web -w` printed a row for
// the rise with READY caught up.
func checkWatch(t *testing.T, out string) {
	t.Helper()
	rows := regexp.MustCompile(`(?m)^web\s+(\d+)\s+(\d+)\s`).FindAllStringSubmatch(out, -1)
	for _, r := range rows {
		replicas, _ := strconv.Atoi(r[1])
		ready, _ := strconv.Atoi(r[2])
		if replicas >= 3 && ready == replicas {
			return
		}
	}
	t.Errorf("kubectl get rcl web -w never showed REPLICAS >= 3 with READY caught up:\n%s", out)
}

// checkTerminal: after the banner, dev's terminal printed one line per
// thing that happened, and no log lines.
func checkTerminal(t *testing.T, lines []string) {
	t.Helper()
	stamp := regexp.MustCompile(`^\d\d:\d\d:\d\d  (\S+)\s`)
	tags := map[string]int{}
	for _, l := range lines {
		if m := stamp.FindStringSubmatch(l); m != nil {
			tags[m[1]]++
			continue
		}
		if strings.Contains(l, "INFO") || strings.Contains(l, "DEBUG") || strings.Contains(l, "healthz") {
			t.Errorf("a log line reached the terminal: %q", l)
		}
	}
	for _, tag := range []string{"refused", "warning", "hpa", "hpa-scale", "fan-out", "status", "pods", "activity", "wake-up", "scale", "to-zero"} {
		if tags[tag] == 0 {
			t.Errorf("the terminal printed no %q line; lines by tag: %v\n%s", tag, tags, strings.Join(lines, "\n"))
		}
	}
}

// logFileOf is the log file the banner names; it must exist and hold the
// logs the terminal does not show.
func logFileOf(t *testing.T, printed []string) string {
	t.Helper()
	for _, l := range printed {
		if rest, ok := strings.CutPrefix(l, "Logs: "); ok {
			path, _, _ := strings.Cut(rest, " ")
			data, err := os.ReadFile(path)
			if err != nil || !bytes.Contains(data, []byte("INFO")) {
				t.Errorf("log file %s: %v, %d bytes without an INFO line", path, err, len(data))
			}
			return path
		}
	}
	t.Errorf("the banner names no log file")
	return ""
}
