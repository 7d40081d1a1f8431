package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics are registered once per process on controller-runtime's registry,
// so they are served by the manager's metrics endpoint next to
// controller-runtime's own; every one is labelled by workload kind.
var (
	fanoutWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scaleplane_fanout_writes_total",
		Help: "Writes that set every group of a workload to its replicas (C1).",
	}, []string{"kind"})
	fanoutConflicts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scaleplane_fanout_conflicts_total",
		Help: "Fan-out writes refused because the workload changed since it was read; each is decided again on a fresh read.",
	}, []string{"kind"})
	statusUpdates = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scaleplane_status_updates_total",
		Help: "Writes of status.replicas or the /scale selector (C2, C3).",
	}, []string{"kind"})
	hpaApplies = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scaleplane_hpa_applies_total",
		Help: "Server-side applies and deletions of built-in HPAs (C4), by operation.",
	}, []string{"kind", "operation"})
	reconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scaleplane_reconcile_errors_total",
		Help: "Reconciles that ended in an error and were retried.",
	}, []string{"kind"})
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "scaleplane_reconcile_duration_seconds",
		Help:    "Time one reconcile of a workload took, writes included.",
		Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
	}, []string{"kind"})
)

func init() {
	metrics.Registry.MustRegister(fanoutWrites, fanoutConflicts, statusUpdates, hpaApplies, reconcileErrors, reconcileDuration)
}
