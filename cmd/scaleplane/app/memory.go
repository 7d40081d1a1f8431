package app

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/go-logr/logr"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/externalscaler"
	"github.com/scaleplane/scaleplane/promql"
)

// memoryLine is what one component that grows with tenant input may hold,
// by the configuration, and how that figure is computed.
type memoryLine struct {
	Component string
	Formula   string
	Bytes     int64
}

// Bounds of the memory budget that the configuration does not set.
const (
	// scrapeConcurrency is the scraper's default concurrency.
	scrapeConcurrency = 32
	// scrapeReadBuffer is one scrape's read buffer.
	scrapeReadBuffer = 256 << 10
	// pendingSampleBytes is one pending sample and its series' labels
	// while a scrape is parsed.
	pendingSampleBytes = 100
	// evalSampleBytes is one sample an evaluation holds (Prometheus' FPoint:
	// a timestamp and a value).
	evalSampleBytes = 16
)

// memoryBudget is every component that can grow with tenant input, each
// with the bound the configuration gives it (docs/design.md has the
// table): what the process may hold besides its informer caches and the
// runtime, whatever tenants send.
func memoryBudget(cfg *configv1alpha2.Configuration) []memoryLine {
	m, q, f := cfg.Metrics, cfg.Autoscaler.Queries, cfg.Autoscaler.Fairness
	line := int64(m.LabelLimit)*int64(m.LabelNameLengthLimit+2*m.LabelValueLengthLimit+6) + 64
	scrape := int64(scrapeReadBuffer) + line + int64(m.SampleLimit)*pendingSampleBytes
	out := []memoryLine{
		{"store", "metrics.maxStoreBytes", m.MaxStoreBytes},
		{"scrapes in flight", "32 × (256 KiB + labelLimit × (labelNameLengthLimit + 2 × labelValueLengthLimit + 6) + 64 + sampleLimit × 100)", scrapeConcurrency * scrape},
		{"request bodies", "servers.webhook.maxBufferedBytes + servers.metrics.maxBufferedBytes + servers.probes.maxBufferedBytes",
			cfg.Servers.Webhook.MaxBufferedBytes + cfg.Servers.Metrics.MaxBufferedBytes + cfg.Servers.Probes.MaxBufferedBytes},
		{"evaluations in flight", "autoscaler.fairness.evaluationSlots × autoscaler.queries.maxSamples × 16", int64(f.EvaluationSlots) * int64(q.MaxSamples) * evalSampleBytes},
		{"parsed queries and requested names", "32 MiB of parsed trees + 2 × 8 MiB of queries evaluated without an owner and their names", promql.ParseCacheBytes + 2*promql.KnownQueryBytes},
	}
	if cfg.Autoscaler.ExternalScaler.BindAddress != "" {
		msg := int64(max(64<<10, q.MaxLength+16<<10))
		out = append(out,
			memoryLine{"external-scaler triggers", "32 MiB of remembered triggers' metadata (externalscaler.Options.MaxTriggerBytes)", externalscaler.DefaultMaxTriggerBytes},
			memoryLine{"external-scaler calls", "(256 waiting + evaluationSlots running) × max(64 KiB, queries.maxLength + 16 KiB)", (externalscaler.DefaultMaxWaiting + int64(f.EvaluationSlots)) * msg})
	}
	return out
}

// memoryTotal is the budget's sum.
func memoryTotal(lines []memoryLine) int64 {
	var n int64
	for _, l := range lines {
		n += l.Bytes
	}
	return n
}

// cgroupMemoryLimit is the memory limit of the process's cgroup (v2's
// memory.max, or v1's memory.limit_in_bytes), 0 when there is none.
func cgroupMemoryLimit() int64 {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		self = nil
	}
	return cgroupMemoryLimitAt("/sys/fs/cgroup", self)
}

// cgroupMemoryLimitAt is the smallest memory limit on the way from the
// process's own cgroup (as /proc/self/cgroup, self, names it) up to the
// root of the hierarchy mounted at mount. The mount's top alone is not
// enough: without a cgroup namespace (cgroup v1 on many hosts, a process
// put in a child cgroup) it is the host's root, unlimited, while the
// limit is set on the process's own cgroup or one above it. Inside a
// container whose mount is its own cgroup, the named path is absent below
// the mount and the mount's top is the container's limit.
func cgroupMemoryLimitAt(mount string, self []byte) int64 {
	v2, v1 := "/", "/"
	for _, line := range strings.Split(string(self), "\n") {
		// hierarchy-ID:controller-list:path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" {
				v1 = parts[2]
			}
		}
	}
	if l := smallestLimit(mount, v2, "memory.max"); l > 0 {
		return l
	}
	return smallestLimit(filepath.Join(mount, "memory"), v1, "memory.limit_in_bytes")
}

// smallestLimit reads file in dir's cgroup and every one above it up to
// the mount's top, and returns the smallest limit among them, 0 when none
// is set ("max", or v1's page-rounded largest value).
func smallestLimit(mount, dir, file string) int64 {
	var least int64
	for d := filepath.Clean("/" + dir); ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(mount, d, file)); err == nil {
			n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			if err == nil && n > 0 && n < 1<<60 && (least == 0 || n < least) {
				least = n
			}
		}
		if d == "/" {
			return least
		}
	}
}

// ApplyMemoryBudget is applyMemoryBudget with the cgroup's limit: the
// binary calls it once at start.
func ApplyMemoryBudget(log logr.Logger, cfg *configv1alpha2.Configuration, gomemlimitSet bool) {
	applyMemoryBudget(log, cfg, cgroupMemoryLimit(), gomemlimitSet)
}

// applyMemoryBudget logs the budget and, when GOMEMLIMIT is unset and the
// cgroup has a memory limit, sets Go's soft limit to 80% of it as the
// Deployment's GOMEMLIMIT does, so the garbage collector works harder
// before the kernel kills the process. It reports a budget over that
// limit: then the configuration can hold more than the pod may.
func applyMemoryBudget(log logr.Logger, cfg *configv1alpha2.Configuration, limit int64, gomemlimitSet bool) {
	lines := memoryBudget(cfg)
	total := memoryTotal(lines)
	kv := []any{"totalBytes", total}
	for _, l := range lines {
		kv = append(kv, l.Component, l.Bytes)
	}
	log.Info("memory budget of what tenant input can make scaleplane hold", kv...)
	if limit <= 0 {
		return
	}
	soft := limit / 5 * 4
	if !gomemlimitSet {
		debug.SetMemoryLimit(soft)
	}
	if total > soft {
		log.Error(fmt.Errorf("memory budget %d bytes is over 80%% of the memory limit (%d bytes)", total, limit),
			"lower metrics.maxStoreBytes, autoscaler.fairness.evaluationSlots or autoscaler.queries.maxSamples, or raise the memory limit (docs/design.md)")
	}
}
