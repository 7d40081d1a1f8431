package autoscaler

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/scaleplane/scaleplane/scaling"
)

// Metrics on controller-runtime's registry, served by the manager's
// metrics endpoint. One series per workload (and trigger): their number is
// the number of autoscaled workloads, which the operator chose.
var (
	desiredReplicas = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "scaleplane_desired_replicas",
		Help: "The count the trigger autoscaler decided for a workload on its last tick.",
	}, []string{"group", "kind", "namespace", "name"})
	triggerValue = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "scaleplane_trigger_value",
		Help: "A trigger's value on the last tick; absent while the trigger has no usable value.",
	}, []string{"group", "kind", "namespace", "name", "trigger"})
	triggerErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scaleplane_trigger_errors_total",
		Help: "Ticks on which a trigger had no usable value (error, no data, NaN or Inf); no data at zero replicas is not counted.",
	}, []string{"group", "kind", "namespace", "name", "trigger"})
	// Every series names the kind with its API group: two kinds of one
	// name in two groups are two sets of series.
	// scaleWrites is by kind only: a failing kind (schema, CEL, RBAC) is
	// what an operator alerts on, and the workload is in the event.
	scaleWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scaleplane_autoscaler_scale_writes_total",
		Help: "Writes of replicas through /scale by the trigger autoscaler, by workload kind and result (success, error).",
	}, []string{"group", "kind", "result"})
)

func init() {
	metrics.Registry.MustRegister(desiredReplicas, triggerValue, triggerErrors, scaleWrites, liveAutoscalers)
}

// The worker gauges, one series per kind. They are computed when scraped,
// so the age of a stuck tick keeps growing from one scrape to the next
// instead of freezing at its last update.
var (
	workersDesc = prometheus.NewDesc("scaleplane_autoscaler_workers",
		"Reconcile workers of a kind's autoscaler (MaxConcurrentReconciles).", []string{"group", "kind"}, nil)
	busyWorkersDesc = prometheus.NewDesc("scaleplane_autoscaler_busy_workers",
		"Workers reconciling a workload of the kind now; at the worker count for longer than a tick, the kind's autoscaling has stalled.", []string{"group", "kind"}, nil)
	oldestTickDesc = prometheus.NewDesc("scaleplane_autoscaler_oldest_tick_seconds",
		"Age of the kind's oldest reconcile in flight, 0 when no worker is busy; one that keeps growing is a stuck worker.", []string{"group", "kind"}, nil)
	deferredDesc = prometheus.NewDesc("scaleplane_autoscaler_deferred_reconciles_total",
		"Reconciles of the kind put back because their namespace already held its share (half) of the workers, so other namespaces' ticks went first.", []string{"group", "kind"}, nil)
	workloadsDesc = prometheus.NewDesc("scaleplane_autoscaler_workloads",
		"Workloads of the kind the autoscaler keeps in memory (History, scalers, explain records); back to 0 when they are all deleted.", []string{"group", "kind"}, nil)
)

// liveAutoscalers collects the worker gauges of every autoscaler whose
// manager runs (SetupWithManager adds it while the manager runs). Several
// in one process (tests that start the app more than once) add up per kind,
// the oldest tick being the oldest of all.
var liveAutoscalers = &autoscalerSet{set: map[*Autoscaler]int{}}

type autoscalerSet struct {
	mu  sync.Mutex
	set map[*Autoscaler]int
}

func (s *autoscalerSet) add(a *Autoscaler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set[a]++
}

func (s *autoscalerSet) remove(a *Autoscaler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set[a]--; s.set[a] <= 0 {
		delete(s.set, a)
	}
}

func (s *autoscalerSet) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{workersDesc, busyWorkersDesc, oldestTickDesc, workloadsDesc, deferredDesc} {
		ch <- d
	}
}

func (s *autoscalerSet) Collect(ch chan<- prometheus.Metric) {
	for _, g := range s.gauges() {
		ch <- prometheus.MustNewConstMetric(workersDesc, prometheus.GaugeValue, float64(g.Workers), g.Group, g.Kind)
		ch <- prometheus.MustNewConstMetric(busyWorkersDesc, prometheus.GaugeValue, float64(g.Busy), g.Group, g.Kind)
		ch <- prometheus.MustNewConstMetric(oldestTickDesc, prometheus.GaugeValue, g.OldestTick.Seconds(), g.Group, g.Kind)
		ch <- prometheus.MustNewConstMetric(workloadsDesc, prometheus.GaugeValue, float64(g.Workloads), g.Group, g.Kind)
		ch <- prometheus.MustNewConstMetric(deferredDesc, prometheus.CounterValue, float64(g.Deferred), g.Group, g.Kind)
	}
}

// workerGauges are one kind's worker gauges.
type workerGauges struct {
	Group, Kind              string
	Workers, Busy, Workloads int
	OldestTick               time.Duration
	Deferred                 uint64
}

// gauges reads every live autoscaler's loops, sorted by kind. The set's
// lock is released before any loop is read (lock order, lifecycle.go).
func (s *autoscalerSet) gauges() []workerGauges {
	s.mu.Lock()
	live := make([]*Autoscaler, 0, len(s.set))
	for a := range s.set {
		live = append(live, a)
	}
	s.mu.Unlock()
	byKind := map[schema.GroupKind]*workerGauges{}
	for _, a := range live {
		for _, k := range a.kindList() {
			gk := k.view.GVK().GroupKind()
			g := byKind[gk]
			if g == nil {
				g = &workerGauges{Group: gk.Group, Kind: gk.Kind}
				byKind[gk] = g
			}
			g.Workers += a.opts.MaxConcurrentReconciles
			busy, oldest := k.running.Busy(a.opts.Now())
			g.Busy += busy
			g.OldestTick = max(g.OldestTick, oldest)
			g.Workloads += k.remembered()
			g.Deferred += k.deferred.Load()
		}
	}
	out := make([]workerGauges, 0, len(byKind))
	for _, g := range byKind {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b workerGauges) int {
		if c := strings.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		return strings.Compare(a.Group, b.Group)
	})
	return out
}

// observeWrite counts one /scale write.
func observeWrite(gk schema.GroupKind, err error) {
	result := "success"
	if err != nil {
		result = "error"
	}
	scaleWrites.WithLabelValues(gk.Group, gk.Kind, result).Inc()
}

// observe publishes a tick's numbers.
func (k *kindLoop) observe(st *workload, d scaling.Decision) {
	ns, name := st.nn.Namespace, st.nn.Name
	// The workload's series are looked up once, not on every tick; their
	// handles are dropped with the series.
	if st.desiredSeries == nil {
		st.desiredSeries = desiredReplicas.WithLabelValues(k.group(), k.kind, ns, name)
	}
	st.desiredSeries.Set(float64(d.Desired))
	for _, t := range d.Triggers {
		if t.Valid {
			g := st.valueSeries[t.Name]
			if g == nil {
				g = triggerValue.WithLabelValues(k.group(), k.kind, ns, name, t.Name)
				if st.valueSeries == nil {
					st.valueSeries = map[string]prometheus.Gauge{}
				}
				st.valueSeries[t.Name] = g
			}
			g.Set(t.Value)
			continue
		}
		triggerValue.DeleteLabelValues(k.group(), k.kind, ns, name, t.Name)
		delete(st.valueSeries, t.Name)
		if !(d.Current == 0 && t.Problem == "no data") {
			triggerErrors.WithLabelValues(k.group(), k.kind, ns, name, t.Name).Inc()
		}
	}
	// Triggers removed from the config lose their series.
	for _, old := range st.gauges {
		if !hasTrigger(d.Triggers, old) {
			triggerValue.DeleteLabelValues(k.group(), k.kind, ns, name, old)
			triggerErrors.DeleteLabelValues(k.group(), k.kind, ns, name, old)
			delete(st.valueSeries, old)
		}
	}
	st.gauges = st.gauges[:0]
	for _, t := range d.Triggers {
		st.gauges = append(st.gauges, t.Name)
	}
}

// deleteMetrics removes a workload's series when it is no longer ours.
func (k *kindLoop) deleteMetrics(st *workload) {
	ns, name := st.nn.Namespace, st.nn.Name
	desiredReplicas.DeleteLabelValues(k.group(), k.kind, ns, name)
	for _, t := range st.gauges {
		triggerValue.DeleteLabelValues(k.group(), k.kind, ns, name, t)
		triggerErrors.DeleteLabelValues(k.group(), k.kind, ns, name, t)
	}
	st.gauges = nil
	st.desiredSeries, st.valueSeries = nil, nil
}

// group is the API group of the kind, the first label of every series.
func (k *kindLoop) group() string { return k.view.GVK().Group }

func hasTrigger(ts []scaling.TriggerDecision, name string) bool {
	for _, t := range ts {
		if t.Name == name {
			return true
		}
	}
	return false
}
