package app

import (
	"fmt"
	"os"
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
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<60 {
			return 0
		}
		return n
	}
	return 0
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
