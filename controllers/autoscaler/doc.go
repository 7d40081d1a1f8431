// Package autoscaler runs scaleplane's trigger autoscaler inside a
// controller-runtime manager: for every profiled workload whose scale config
// has triggers or idle settings, it samples the triggers every polling
// interval, asks scaling.Decide for the count, and writes spec.replicas
// through the workload's /scale subresource. The fan-out controller (C1)
// carries that count to the groups, exactly as it does for kubectl scale.
//
// It also serves the two HTTP endpoints of the autoscaler (internal/endpoints),
// mounted on the manager's metrics server behind its authentication and
// authorization:
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
// Seams. The package is the loop and its wiring; five packages under
// internal/ hold what sits beside the loop, each behind a narrow seam:
//
//   - internal/scalings, the Scaling writer: Writer applies the statuses
//     the loop offers (Offer, Forget) within a bucket per workload, one per
//     namespace and one for the process; ActivityWriter records activity in
//     a Scaling from any replica (Record); Watch learns whether Scalings
//     are served, renames legacy ones and calls the loop's Wake when a
//     Scaling's activity moves or it is deleted. The loop reaches it
//     through env.scalings and env.activity; it knows no loop.
//   - internal/status, the Scaling's status and the state a new leader
//     restores: State, Build (the status from an Input the loop fills) and
//     HistoryToStatus/HistoryFromStatus. Pure functions, no lock.
//   - internal/endpoints, the HTTP endpoints: paths, request checks and
//     bodies (Explanation, Record, ActivityResponse). It asks the loop
//     through its Loop interface (Explain, RecordActivity), which
//     endpoints.go implements over the loops' memory.
//   - internal/foreign finds the HPAs and KEDA ScaledObjects the loop must
//     not run beside (Finder.Find).
//   - internal/workers, the loop's workers: each namespace's share of a
//     kind's workers (Shares), the reconciles in flight (InFlight), and
//     scaler calls bounded in time (Bounded). It knows no workload.
//
// The external scaler (package externalscaler) reaches the autoscaler only
// through an interface it declares (externalscaler.Targets), which
// Autoscaler implements (seams.go); seams.go also keeps the names this
// package's users know (ScalingName, State, Record, ...) as aliases.
//
// Files of the loop: plan.go holds the pure policies (which workloads are
// ours, pause annotations, when a tick is due, event text, warnings once
// per change); tick.go executes one tick (read, decide, write through
// /scale, events); pipeline.go builds the trigger sources over the
// embedded store; scalers.go keeps each workload's scalers and adapts
// promql sources; workers.go applies each namespace's share of the
// workers;
// hpa.go wakes a workload when an HPA targeting it changes;
// handle.go finds a ScaleHandle's pods; lifecycle.go keeps a workload's
// memory from first sight to deletion, with the lock order and the bounds
// on every scaler call that keep a worker from wedging; scalinghooks.go
// reads a workload's Scaling back (activity, restore) and offers its
// newest status to the writer; metrics.go the Prometheus metrics (per
// workload, and the worker gauges per kind). setup.go (SetupWithManager,
// SetupKind) and runtime.go (StartKind) wire a kind.
//
// Lock domains (lifecycle.go gives their order): Autoscaler.kindsMu (the
// kinds), kindLoop.mu (a kind's workloads), workload.mu (what the
// endpoints and the scraper read) and liveAutoscalers.mu (the gauges);
// in internal/foreign, Finder.mu (KEDA's presence); in internal/workers,
// InFlight.mu and Shares.mu (the workers); in internal/scalings,
// Writer.mu and ActivityWriter.mu (what waits to be written).
// internal/status and internal/endpoints hold none.
//
// It must not make scaling decisions (package scaling does), write anything
// but R through /scale and Scaling objects, run beside a built-in or foreign HPA for the same
// workload, emit a Warning on every tick for a condition that persists, or
// hold a lock while taking another or while calling anything that can block.
package autoscaler
