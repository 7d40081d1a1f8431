// Package sidebyside measures scaleplane beside KEDA on one real control
// plane: the same workloads of one profiled kind, the same metric, the same
// polling interval and target, autoscaled by (A) scaleplane's trigger
// autoscaler on its embedded store, (B) scaleplane reading the real
// Prometheus as its remote source and (C) KEDA ScaledObjects with the
// Prometheus scaler, scaled by the real HPA controller. Per arm it reports
// the CPU seconds per minute and peak RSS of every process the arm needs,
// the API-server requests per minute it causes, and the time from a metric
// step to spec.replicas changing. A second test creates many workloads at
// once and reports what admitting, fanning out and recording them costs.
//
// Both tests are heavy and run only when asked for:
//
//	SCALEPLANE_SIDE_BY_SIDE=1 SCALEPLANE_SIDE_BY_SIDE_N=1000 go -C e2e test -count=1 -timeout 90m ./sidebyside/
//
// (make bench-keda). Without the variable only the unit tests of the
// measuring helpers in this file's package run. docs/performance.md records
// a run and docs/sizing.md what follows from it.
package sidebyside
