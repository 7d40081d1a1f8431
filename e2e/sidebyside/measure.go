package sidebyside

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// cpuTicks returns utime+stime (fields 14 and 15) of a /proc/<pid>/stat
// line. The command name (field 2) may hold spaces and parentheses, so the
// fields are counted from its last ')'.
func cpuTicks(stat []byte) (uint64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in %q", stat)
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("short stat line %q", stat)
	}
	u, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime: %w", err)
	}
	s, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime: %w", err)
	}
	return u + s, nil
}

// ProcessCPU is the CPU time a process has used so far.
func ProcessCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	t, err := cpuTicks(data)
	if err != nil {
		return 0, fmt.Errorf("pid %d: %w", pid, err)
	}
	return time.Duration(t) * time.Second / clockTicks, nil
}

// peakRSS returns VmHWM of a /proc/<pid>/status file, in bytes.
func peakRSS(status []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("unexpected VmHWM line %q", line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmHWM: %w", err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("no VmHWM line")
}

// ProcessPeakRSS is the largest resident set a process has had (VmHWM).
func ProcessPeakRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return peakRSS(data)
}

// FindPIDs lists the running processes whose argv[0] has this base name
// and whose arguments contain every one of want as a substring: a
// program of this test's control plane, told apart from other test runs'
// by a path under its own folder.
func FindPIDs(base string, want ...string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(data) == 0 {
			continue
		}
		if matchCmdline(data, base, want) {
			out = append(out, pid)
		}
	}
	return out, nil
}

func matchCmdline(data []byte, base string, want []string) bool {
	args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
	if filepath.Base(args[0]) != base {
		return false
	}
	joined := strings.Join(args[1:], " ")
	for _, w := range want {
		if !strings.Contains(joined, w) {
			return false
		}
	}
	return true
}

// APICounts is what the API server counted in apiserver_request_total.
type APICounts struct {
	// All requests, and Writes: those that change an object (create,
	// update, patch, apply, delete).
	All, Writes float64
}

// Sub is a - b.
func (a APICounts) Sub(b APICounts) APICounts {
	return APICounts{All: a.All - b.All, Writes: a.Writes - b.Writes}
}

var writeVerbs = map[string]bool{"POST": true, "CREATE": true, "PUT": true, "UPDATE": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

// Histogram is a cumulative histogram: upper bounds ascending and the
// count of observations at or under each, the last bound +Inf.
type Histogram struct {
	Bounds []float64
	Counts []float64
}

// Sub is the observations of h not in b (b taken earlier from the same
// histogram).
func (h Histogram) Sub(b Histogram) Histogram {
	out := Histogram{Bounds: h.Bounds, Counts: slices.Clone(h.Counts)}
	if len(b.Counts) == len(h.Counts) {
		for i := range out.Counts {
			out.Counts[i] -= b.Counts[i]
		}
	}
	return out
}

// Quantile estimates the q-quantile by linear interpolation inside the
// bucket it falls in, as PromQL's histogram_quantile does. With no
// observation it is NaN; in the +Inf bucket, the largest finite bound.
func (h Histogram) Quantile(q float64) float64 {
	if len(h.Counts) == 0 || h.Counts[len(h.Counts)-1] <= 0 {
		return math.NaN()
	}
	rank := q * h.Counts[len(h.Counts)-1]
	for i, c := range h.Counts {
		if c < rank {
			continue
		}
		if math.IsInf(h.Bounds[i], 1) {
			if i == 0 {
				return math.NaN()
			}
			return h.Bounds[i-1]
		}
		lo, below := 0.0, 0.0
		if i > 0 {
			lo, below = h.Bounds[i-1], h.Counts[i-1]
		}
		if c == below {
			return h.Bounds[i]
		}
		return lo + (h.Bounds[i]-lo)*(rank-below)/(c-below)
	}
	return h.Bounds[len(h.Bounds)-1]
}

// APIServerMetrics is what the benchmark reads from the API server's
// /metrics: its request counters and the admission webhooks' latency.
type APIServerMetrics struct {
	Requests APICounts
	// WritesBy counts the writes by "VERB resource[/subresource]".
	WritesBy map[string]float64
	// Admission is apiserver_admission_webhook_admission_duration_seconds
	// summed over the webhooks whose name has the prefix asked for.
	Admission Histogram
}

// ParseAPIServerMetrics reads the API server's /metrics text. Webhooks
// whose name starts with webhookPrefix count in Admission.
func ParseAPIServerMetrics(r io.Reader, webhookPrefix string) (APIServerMetrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return APIServerMetrics{}, fmt.Errorf("parse the API server's metrics: %w", err)
	}
	out := APIServerMetrics{WritesBy: map[string]float64{}}
	if f := families["apiserver_request_total"]; f != nil {
		for _, m := range f.GetMetric() {
			v := m.GetCounter().GetValue()
			out.Requests.All += v
			var verb, resource, sub string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "verb":
					verb = strings.ToUpper(l.GetValue())
				case "resource":
					resource = l.GetValue()
				case "subresource":
					sub = l.GetValue()
				}
			}
			if writeVerbs[verb] {
				out.Requests.Writes += v
				if sub != "" {
					resource += "/" + sub
				}
				out.WritesBy[verb+" "+resource] += v
			}
		}
	}
	if f := families["apiserver_admission_webhook_admission_duration_seconds"]; f != nil {
		sums := map[float64]float64{}
		for _, m := range f.GetMetric() {
			match := false
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && strings.HasPrefix(l.GetValue(), webhookPrefix) {
					match = true
				}
			}
			if !match {
				continue
			}
			h := m.GetHistogram()
			inf := false
			for _, b := range h.GetBucket() {
				sums[b.GetUpperBound()] += float64(b.GetCumulativeCount())
				inf = inf || math.IsInf(b.GetUpperBound(), 1)
			}
			if !inf {
				sums[math.Inf(1)] += float64(h.GetSampleCount())
			}
		}
		for b := range sums {
			out.Admission.Bounds = append(out.Admission.Bounds, b)
		}
		slices.Sort(out.Admission.Bounds)
		for _, b := range out.Admission.Bounds {
			out.Admission.Counts = append(out.Admission.Counts, sums[b])
		}
	}
	return out, nil
}

// TopWrites lists the n largest differences after - before of WritesBy,
// largest first, as "VERB resource: count".
func TopWrites(before, after map[string]float64, n int) []string {
	type kv struct {
		k string
		v float64
	}
	var all []kv
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			all = append(all, kv{k, d})
		}
	}
	slices.SortFunc(all, func(a, b kv) int {
		if a.v != b.v {
			if a.v > b.v {
				return -1
			}
			return 1
		}
		return strings.Compare(a.k, b.k)
	})
	var out []string
	for _, e := range all[:min(n, len(all))] {
		out = append(out, fmt.Sprintf("%s: %.0f", e.k, e.v))
	}
	return out
}

// Percentile is the q-quantile (0..1) of ds by the nearest-rank method; 0
// for none.
func Percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// ArmResult is one row of the side-by-side table.
type ArmResult struct {
	Arm string
	// Processes names what CPU and RSS were summed over; Limits the
	// client-side limits the arm's programs ran with.
	Processes, Limits string
	// CPUPerMinute is the CPU seconds a minute of wall time the arm is
	// charged in its stepped window (Charges), RestCPUPerMinute the same
	// running with no step.
	CPUPerMinute, RestCPUPerMinute float64
	// APIServerCPUPerMinute is kube-apiserver's CPU above its idle rate in
	// the stepped window: shown, not charged to the arm.
	APIServerCPUPerMinute float64
	// PeakRSS is the sum of the VmHWM of the arm's own processes (and
	// Prometheus' when it is charged), in bytes.
	PeakRSS int64
	// RequestsPerMinute and WritesPerMinute are API-server requests the
	// arm caused in its stepped window (less the idle rate);
	// RestRequestsPerMinute those it caused at rest.
	RequestsPerMinute, WritesPerMinute, RestRequestsPerMinute float64
	// StepsPerMinute is the pace the arm was stepped at, the same for every
	// arm: per-step costs are per-minute costs over it.
	StepsPerMinute float64
	// Reactions is how many steps were timed; P50 and P99 their quantiles;
	// Missed the steps not followed within Deadline, counted as taking
	// Deadline, so a quantile at Deadline is a lower bound.
	Reactions, Missed int
	P50, P99          time.Duration
	Deadline          time.Duration
}

// perStep is a per-minute figure over the steps of a minute.
func (r ArmResult) perStep(perMinute float64) float64 {
	if r.StepsPerMinute <= 0 {
		return math.NaN()
	}
	return perMinute / r.StepsPerMinute
}

// FormatTable renders the results under title, then the ratio of the
// last row (the reference, KEDA) to each other row, then what each arm's
// figures were summed over.
func FormatTable(title string, rows []ArmResult) string {
	var b strings.Builder
	fmt.Fprintln(&b, title)
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "arm\tCPU s/min\tCPU ms/step\tCPU s/min at rest\tpeak RSS MiB\tAPI req/min\tAPI writes/min\twrites/step\tAPI req/min at rest\tapiserver CPU s/min\treaction p50\treaction p99\tsteps\tmissed")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%.2f\t%.0f\t%.2f\t%.1f\t%.0f\t%.0f\t%.2f\t%.0f\t%.2f\t%s\t%s\t%d\t%d\n", r.Arm, r.CPUPerMinute, 1000*r.perStep(r.CPUPerMinute), r.RestCPUPerMinute,
			float64(r.PeakRSS)/(1<<20), r.RequestsPerMinute, r.WritesPerMinute, r.perStep(r.WritesPerMinute), r.RestRequestsPerMinute, r.APIServerCPUPerMinute,
			r.quantile(r.P50), r.quantile(r.P99), r.Reactions, r.Missed)
	}
	_ = w.Flush()
	if len(rows) >= 2 {
		ref := rows[len(rows)-1]
		fmt.Fprintf(&b, "\nratios %s / arm:\n", ref.Arm)
		w = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "arm\tCPU\tCPU at rest\tmemory\tAPI requests\treaction p50\treaction p99")
		for _, r := range rows[:len(rows)-1] {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Arm, ratio(ref.CPUPerMinute, r.CPUPerMinute), ratio(ref.RestCPUPerMinute, r.RestCPUPerMinute),
				ratio(float64(ref.PeakRSS), float64(r.PeakRSS)), ratio(ref.RequestsPerMinute, r.RequestsPerMinute),
				ratio(ref.P50.Seconds(), r.P50.Seconds()), ratio(ref.P99.Seconds(), r.P99.Seconds()))
		}
		_ = w.Flush()
	}
	fmt.Fprintln(&b)
	for _, r := range rows {
		fmt.Fprintf(&b, "%s: %s; client limits: %s\n", r.Arm, r.Processes, r.Limits)
	}
	return b.String()
}

// quantile prints a reaction quantile; one that reached the deadline is
// a lower bound, written ">=".
func (r ArmResult) quantile(d time.Duration) string {
	if r.Missed > 0 && d >= r.Deadline {
		return ">=" + d.Round(time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// ratio is a/b to one decimal, or "-" when b is not positive.
func ratio(a, b float64) string {
	if b <= 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "-"
	}
	return fmt.Sprintf("%.1fx", a/b)
}
