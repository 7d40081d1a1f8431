package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/promql"
)

// TestFairnessFromConfig: a defaulted configuration's fairness settings
// are package promql's defaults (config cannot import promql, so the
// numbers are kept twice), and set ones reach the scheduler.
func TestFairnessFromConfig(t *testing.T) {
	c := &configv1alpha2.Configuration{}
	c.Default()
	got := fairOptions(c)
	got.Registerer = nil
	want := promql.FairOptions{Slots: promql.DefaultSlots, SlotsPerNamespace: promql.DefaultSlots / 2, MaxWaitingPerNamespace: promql.DefaultMaxWaitingPerNamespace,
		SamplesPerMinute: promql.DefaultSamplesPerMinute, EvalTimePerMinute: promql.DefaultEvalTimePerMinute}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fairness of a defaulted configuration (-promql defaults +config defaults):\n%s", diff)
	}
	c.Autoscaler.Fairness = configv1alpha2.Fairness{EvaluationSlots: 1, EvaluationSlotsPerNamespace: 2, MaxWaitingPerNamespace: 3, SamplesPerMinute: 4, EvalSecondsPerMinute: 5}
	got = fairOptions(c)
	got.Registerer = nil
	want = promql.FairOptions{Slots: 1, SlotsPerNamespace: 2, MaxWaitingPerNamespace: 3, SamplesPerMinute: 4, EvalTimePerMinute: 5 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fairness of a set configuration (-want +got):\n%s", diff)
	}
}

// TestMemoryBudgetCountsEveryTenantInput: the budget names every
// component tenant input can grow, each with the figure its formula gives
// for the defaults, and the external scaler's only when it is served.
func TestMemoryBudgetCountsEveryTenantInput(t *testing.T) {
	c := &configv1alpha2.Configuration{}
	c.Default()
	got := map[string]int64{}
	for _, l := range memoryBudget(c) {
		got[l.Component] = l.Bytes
	}
	want := map[string]int64{
		"store":                              128 << 20,
		"scrapes in flight":                  32 * (256<<10 + 64*(256+2*4096+6) + 64 + 10000*100),
		"request bodies":                     64<<20 + 16<<20 + 64<<10,
		"evaluations in flight":              8 * 1_000_000 * 16,
		"parsed queries and requested names": 32<<20 + 2*8<<20,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("budget without the external scaler (-want +got):\n%s", diff)
	}
	c.Autoscaler.ExternalScaler.BindAddress = ":9090"
	lines := memoryBudget(c)
	got = map[string]int64{}
	for _, l := range lines {
		got[l.Component] = l.Bytes
	}
	want["external-scaler triggers"] = 32 << 20
	want["external-scaler calls"] = (256 + 8) * 64 << 10
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("budget with the external scaler (-want +got):\n%s", diff)
	}
	t.Logf("default budget: %d MiB with the external scaler", memoryTotal(lines)>>20)
}

// TestMemoryBudgetOverLimitReported: a budget over 80% of the cgroup's
// limit is reported as an error saying what to lower.
func TestMemoryBudgetOverLimitReported(t *testing.T) {
	c := &configv1alpha2.Configuration{}
	c.Default()
	var errs []string
	log := funcr.New(func(prefix, args string) { errs = append(errs, args) }, funcr.Options{})
	applyMemoryBudget(log, c, 256<<20, true)
	found := false
	for _, e := range errs {
		if strings.Contains(e, "lower metrics.maxStoreBytes") {
			found = true
		}
	}
	if !found {
		t.Errorf("no error for a budget over a 256 MiB limit; logged %q", errs)
	}
}

// TestCgroupMemoryLimitOfTheProcessOwnCgroup: the limit that applies is
// the smallest on the way from the process's own cgroup up to the mount's
// top, not the top's alone (unlimited on a host without a cgroup
// namespace, where a process runs in a child cgroup with a limit).
func TestCgroupMemoryLimitOfTheProcessOwnCgroup(t *testing.T) {
	const unlimitedV1 = "9223372036854771712\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		self  string
		want  int64
	}{
		{name: "v1: a limit on the own cgroup under an unlimited root",
			files: map[string]string{"memory/memory.limit_in_bytes": unlimitedV1, "memory/pod/memory.limit_in_bytes": unlimitedV1,
				"memory/pod/app/memory.limit_in_bytes": "268435456\n"},
			self: "4:memory:/pod/app\n0::/\n", want: 256 << 20},
		{name: "v1: a limit on the parent, the own cgroup unlimited",
			files: map[string]string{"memory/memory.limit_in_bytes": unlimitedV1, "memory/pod/memory.limit_in_bytes": "536870912\n",
				"memory/pod/app/memory.limit_in_bytes": unlimitedV1},
			self: "4:cpu,memory:/pod/app\n", want: 512 << 20},
		{name: "v1 in a container: the own path is the host's, the mount's top is the container's cgroup",
			files: map[string]string{"memory/memory.limit_in_bytes": "536870912\n"},
			self:  "4:memory:/kubepods/burstable/pod1/abc\n", want: 512 << 20},
		{name: "v1: no limit anywhere",
			files: map[string]string{"memory/memory.limit_in_bytes": unlimitedV1, "memory/app/memory.limit_in_bytes": unlimitedV1},
			self:  "4:memory:/app\n", want: 0},
		{name: "v2: a limit on the own cgroup",
			files: map[string]string{"app/memory.max": "268435456\n", "memory.max": "max\n"},
			self:  "0::/app\n", want: 256 << 20},
		{name: "v2 in a container (cgroup namespace)",
			files: map[string]string{"memory.max": "268435456\n"},
			self:  "0::/\n", want: 256 << 20},
		{name: "nothing to read", self: "", want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for name, data := range tc.files {
				p := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := cgroupMemoryLimitAt(root, []byte(tc.self)); got != tc.want {
				t.Errorf("limit %d, want %d", got, tc.want)
			}
		})
	}
}
