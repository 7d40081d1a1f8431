// Package autoscaler runs scaleplane's trigger autoscaler inside a
// controller-runtime manager: for every profiled workload whose scale config
// has triggers or idle settings, it samples the triggers every polling
// interval, asks scaling.Decide for the count, and writes spec.replicas
// through the workload's /scale subresource. The fan-out controller (C1)
// carries that count to the groups, exactly as it does for kubectl scale.
//
// It also owns the two HTTP endpoints of the autoscaler, mounted on the
// manager's metrics server behind its authentication and authorization:
// POST /activity/{namespace}/{resource}/{name} records activity (a gateway
// waking a function from zero) and GET /debug/autoscaler/{namespace}/{resource}/{name}
// explains the last decisions. And it tells the scraper which pods to scrape
// (Discoverer).
//
// It keeps one Scaling object (api/v1alpha1) per profiled workload, whatever
// sets its count: who scales it and why, the triggers' values, the last
// decisions, and the History a new leader restores before its first
// decision. Activity posted to any replica is recorded there, so it reaches
// the leader through its watch of Scalings.
//
// Files: plan.go holds the pure policies (which workloads are ours, pause
// annotations, when a tick is due, event text, warnings once per change);
// tick.go executes one tick (read, decide, write through /scale, events);
// scalers.go keeps each workload's scalers and adapts promql sources;
// foreign.go finds HPAs and KEDA ScaledObjects we must not run beside;
// setup.go registers the controllers and lists the pods to scrape;
// lifecycle.go keeps a workload's memory from first sight to deletion, with
// the lock order and the bounds on every scaler call that keep a worker
// from wedging; explain.go and activity.go are the endpoints; metrics.go
// the Prometheus metrics (per workload, and the worker gauges per kind);
// scalingstatus.go builds a Scaling's status (pure), scalings.go writes
// Scalings within their token buckets, scalinghooks.go reads them back
// (activity, restore) and watches them, activitywriter.go records activity
// in them from any replica.
//
// It must not make scaling decisions (package scaling does), write anything
// but R through /scale and Scaling objects, run beside a built-in or foreign HPA for the same
// workload, emit a Warning on every tick for a condition that persists, or
// hold a lock while taking another or while calling anything that can block.
package autoscaler
