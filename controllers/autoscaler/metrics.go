package autoscaler

import (
	"github.com/prometheus/client_golang/prometheus"
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
	}, []string{"kind", "namespace", "name"})
	triggerValue = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "scaleplane_trigger_value",
		Help: "A trigger's value on the last tick; absent while the trigger has no usable value.",
	}, []string{"kind", "namespace", "name", "trigger"})
	triggerErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scaleplane_trigger_errors_total",
		Help: "Ticks on which a trigger had no usable value (error, no data, NaN or Inf); no data at zero replicas is not counted.",
	}, []string{"kind", "namespace", "name", "trigger"})
	// scaleWrites is by kind only: a failing kind (schema, CEL, RBAC) is
	// what an operator alerts on, and the workload is in the event.
	scaleWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scaleplane_autoscaler_scale_writes_total",
		Help: "Writes of replicas through /scale by the trigger autoscaler, by workload kind and result (success, error).",
	}, []string{"kind", "result"})
)

func init() {
	metrics.Registry.MustRegister(desiredReplicas, triggerValue, triggerErrors, scaleWrites)
}

// observeWrite counts one /scale write.
func observeWrite(kind string, err error) {
	result := "success"
	if err != nil {
		result = "error"
	}
	scaleWrites.WithLabelValues(kind, result).Inc()
}

// observe publishes a tick's numbers.
func (k *kindLoop) observe(st *workload, d scaling.Decision) {
	ns, name := st.nn.Namespace, st.nn.Name
	desiredReplicas.WithLabelValues(k.kind, ns, name).Set(float64(d.Desired))
	for _, t := range d.Triggers {
		if t.Valid {
			triggerValue.WithLabelValues(k.kind, ns, name, t.Name).Set(t.Value)
			continue
		}
		triggerValue.DeleteLabelValues(k.kind, ns, name, t.Name)
		if !(d.Current == 0 && t.Problem == "no data") {
			triggerErrors.WithLabelValues(k.kind, ns, name, t.Name).Inc()
		}
	}
	// Triggers removed from the config lose their series.
	for _, old := range st.gauges {
		if !hasTrigger(d.Triggers, old) {
			triggerValue.DeleteLabelValues(k.kind, ns, name, old)
			triggerErrors.DeleteLabelValues(k.kind, ns, name, old)
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
	desiredReplicas.DeleteLabelValues(k.kind, ns, name)
	for _, t := range st.gauges {
		triggerValue.DeleteLabelValues(k.kind, ns, name, t)
		triggerErrors.DeleteLabelValues(k.kind, ns, name, t)
	}
	st.gauges = nil
}

func hasTrigger(ts []scaling.TriggerDecision, name string) bool {
	for _, t := range ts {
		if t.Name == name {
			return true
		}
	}
	return false
}
