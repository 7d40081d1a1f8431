package hostile

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

// The areas inputs are thrown at.
const (
	areaKubectl  = "admission through kubectl"
	areaReviews  = "raw AdmissionReviews"
	areaDebug    = "debug endpoints"
	areaActivity = "activity endpoint"
	areaScrape   = "scrape targets"
	areaCommands = "offline commands and start-up"
)

var areas = []string{areaKubectl, areaReviews, areaDebug, areaActivity, areaScrape, areaCommands}

// minInputs is the suite's floor: it must try at least this many inputs.
const minInputs = 100

// TestHostileInputs runs the binary under a memory limit and
// throws every group of hostile inputs at it, each input with its expected
// outcome; after each group the same process must still run, be ready and
// admit a valid object. The groups most likely to take a broken build down
// (cost bombs, cardinality and label bombs) come last, so that a run on
// such a build still reports every other outcome first.
func TestHostileInputs(t *testing.T) {
	began := time.Now()
	s := newSuite(t)
	s.afterGroup(t, "start")
	for _, g := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"raw reviews: transport", s.reviewTransportInputs},
		{"raw reviews: content", s.reviewContentInputs},
		{"activity endpoint", s.activityInputs},
		{"commands: hostile files and flags", s.commandInputs},
		{"kubectl: wrong types", s.kubectlTypeInputs},
		{"kubectl: numbers", s.kubectlNumberInputs},
		{"kubectl: annotation JSON", s.kubectlAnnotationInputs},
		{"kubectl: references", s.kubectlReferenceInputs},
		{"kubectl: metrics, schedules, behavior", s.kubectlRuleInputs},
		{"kubectl: bombs", s.kubectlBombInputs},
		{"debug endpoints: requests", s.debugRequestInputs},
		{"scrape targets: transport", s.scrapeTransportInputs},
		{"scrape targets: content", s.scrapeContentInputs},
		{"kubectl: query cost", s.kubectlQueryInputs},
		{"debug endpoints: query cost", s.debugQueryInputs},
		{"scrape targets: label bombs", s.scrapeLabelInputs},
		{"scrape targets: the store's byte budget", s.scrapeStoreInputs},
		{"scrape targets: a million series", s.scrapeSeriesInputs},
	} {
		t.Run(g.name, g.run)
		if !s.afterGroup(t, g.name) {
			// The process is gone: every later outcome would be its
			// absence. The summary still says what was tried.
			break
		}
	}
	// The metrics must count at least what every group saw; a run of some
	// groups only (-run with a subtest pattern) has no such floor.
	if s.bin.alive() == nil && !strings.Contains(flag.Lookup("test.run").Value.String(), "/") {
		s.metricsReport(t)
	}
	s.summary(t, time.Since(began))
}

// suite is what every group of inputs shares: the binary, the clients that
// reach it, and the ledger of outcomes.
type suite struct {
	// top is the suite's test, for what lives through every group.
	top *testing.T
	bin *binary
	// ns holds the canaries and the objects the inputs create.
	ns string
	// token is a caller allowed every endpoint of the metrics server.
	token string
	// metrics reaches the metrics server (self-signed certificate, as in a
	// cluster without one configured); webhook trusts the framework's CA.
	metrics *http.Client
	webhook *http.Client

	mu         sync.Mutex
	outcomes   []outcome
	invariants []invariant
	// tooMany counts the 429s floods got, by server.
	tooMany map[string]int
	// scrape serves the scrape targets, once the first scrape group runs.
	scrape *scrapeSetup
	// scrapeDown counts the targets seen down, by problemOf their error.
	scrapeDown map[string]int
}

// outcome is one input's result.
type outcome struct {
	Area, Input string
	Matched     bool
	// FieldPath: refused with a 422 that names the expected field path.
	FieldPath bool
}

// invariant is what was seen after one group.
type invariant struct {
	Group      string
	Problems   []string
	CgroupPeak int64
	HWM        int64
}

func newSuite(t *testing.T, opts ...binaryOption) *suite {
	t.Helper()
	ns := cluster.Namespace(t)
	s := &suite{
		top:        t,
		tooMany:    map[string]int{},
		scrapeDown: map[string]int{},
		ns:         ns,
		bin:        startBinary(t, ns, opts...),
		token:      callerToken(t, ns),
		// Redirects are outcomes, not followed: a traversal answered with a
		// redirect to the clean path served nothing else.
		metrics: &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{TLSClientConfig: metricsTLS},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}
	s.webhook = &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{TLSClientConfig: webhookTLS(t), MaxIdleConnsPerHost: 64}}
	t.Cleanup(func() {
		s.metrics.CloseIdleConnections()
		s.webhook.CloseIdleConnections()
	})
	return s
}

// expect records an input's outcome and fails the test when it differs
// from what was wanted. fieldPath says the input was refused with a 422
// naming its field path.
func (s *suite) expect(t *testing.T, area, input string, want, got any, fieldPath bool) {
	t.Helper()
	diff := cmp.Diff(want, got)
	if diff != "" {
		t.Errorf("%s: %s: outcome (-want +got):\n%s", area, input, diff)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outcomes = append(s.outcomes, outcome{Area: area, Input: input, Matched: diff == "", FieldPath: fieldPath && diff == ""})
}

// afterGroup checks the invariants: the process started is still running
// (it is never restarted: after an exit no group runs), it is ready, and it
// admits a valid object, mutated, within a deadline. It reports whether
// the process still runs.
func (s *suite) afterGroup(t *testing.T, group string) bool {
	t.Helper()
	inv := invariant{Group: group}
	defer func() {
		for _, p := range inv.Problems {
			t.Errorf("after %q: %s", group, p)
		}
		s.invariants = append(s.invariants, inv)
	}()
	if err := s.bin.alive(); err != nil {
		mem, _ := s.bin.cgroup.stats()
		inv.CgroupPeak = mem.Peak
		inv.Problems = append(inv.Problems, fmt.Sprintf("%v (the cgroup counted %d OOM kills)", err, mem.OOMKills))
		return false
	}
	if err := within(framework.DefaultTimeout, s.bin.ready); err != nil {
		inv.Problems = append(inv.Problems, "not ready: "+err.Error())
	}
	n := len(s.invariants)
	if err := within(framework.DefaultTimeout, func(ctx context.Context) error { return canary(ctx, s.ns, n) }); err != nil {
		inv.Problems = append(inv.Problems, "admission: "+err.Error())
	}
	if err := s.bin.alive(); err != nil {
		inv.Problems = append(inv.Problems, err.Error())
		return false
	}
	mem, hwm, err := s.bin.memory()
	if err != nil {
		inv.Problems = append(inv.Problems, "memory: "+err.Error())
	}
	inv.CgroupPeak, inv.HWM = mem.Peak, hwm
	if mem.OOMKills > 0 {
		inv.Problems = append(inv.Problems, fmt.Sprintf("%d OOM kills in the cgroup", mem.OOMKills))
	}
	return true
}

// within retries f until it succeeds or timeout passes, and returns its
// last error.
func within(timeout time.Duration, f func(ctx context.Context) error) error {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		err := f(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s: %w", timeout, err)
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-time.After(time.Until(deadline)):
		}
	}
}

// summary logs the table the issue asks for and fails the suite when it
// tried too few inputs, or when an invariant or an expectation failed
// (those have failed it already, with their diffs).
func (s *suite) summary(t *testing.T, took time.Duration) {
	t.Helper()
	type row struct{ inputs, matched, fieldPath int }
	rows := map[string]*row{}
	var total row
	var mismatched []string
	for _, o := range s.outcomes {
		r := rows[o.Area]
		if r == nil {
			r = &row{}
			rows[o.Area] = r
		}
		for _, r := range []*row{r, &total} {
			r.inputs++
			if o.Matched {
				r.matched++
			}
			if o.FieldPath {
				r.fieldPath++
			}
		}
		if !o.Matched {
			mismatched = append(mismatched, o.Area+": "+o.Input)
		}
	}
	// VmHWM is read while the process runs: it is gone with it.
	restarts := 0
	var hwm int64
	for _, inv := range s.invariants {
		hwm = max(hwm, inv.HWM)
	}
	if s.bin.alive() != nil {
		restarts = 1
	} else if h, err := vmHWM(s.bin.pid); err == nil {
		hwm = h
	}
	mem, err := s.bin.cgroup.stats()
	if err != nil {
		t.Errorf("read memory: %v", err)
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "area\tinputs\toutcomes matched\trefused with a field path\t")
	for _, a := range areas {
		if r := rows[a]; r != nil {
			fmt.Fprintf(w, "%s\t%d\t%d\t%d\t\n", a, r.inputs, r.matched, r.fieldPath)
		}
	}
	fmt.Fprintf(w, "total\t%d\t%d\t%d\t\n", total.inputs, total.matched, total.fieldPath)
	_ = w.Flush()
	var groups strings.Builder
	for _, inv := range s.invariants {
		state := "ok"
		if len(inv.Problems) > 0 {
			state = strings.Join(inv.Problems, "; ")
		}
		fmt.Fprintf(&groups, "  after %-40s cgroup peak %s, VmHWM %s: %s\n", inv.Group, mib(inv.CgroupPeak), mib(inv.HWM), state)
	}
	sort.Strings(mismatched)
	t.Logf("hostile inputs against the scaleplane binary (pid %d) under a %s memory limit, GOMEMLIMIT=%s, in %s:\n%s"+
		"peak memory: cgroup max usage %s, VmHWM %s; limit hit %d times, OOM kills %d; restarts %d\ninvariants after each group:\n%s"+
		"outcomes not matched: %d%s",
		s.bin.pid, mib(memoryLimit), goMemLimit, took.Round(time.Second), b.String(),
		mib(mem.Peak), mib(hwm), mem.Failcnt, mem.OOMKills, restarts, groups.String(), len(mismatched), bulleted(mismatched))
	if total.inputs < minInputs && restarts == 0 && !strings.Contains(flag.Lookup("test.run").Value.String(), "/") {
		t.Errorf("%d inputs tried, want at least %d", total.inputs, minInputs)
	}
	if restarts != 0 {
		t.Errorf("the binary exited during the suite: a Deployment would have restarted it (its output is logged below)")
	}
}

func bulleted(l []string) string {
	var b strings.Builder
	for _, s := range l {
		b.WriteString("\n  " + s)
	}
	return b.String()
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
