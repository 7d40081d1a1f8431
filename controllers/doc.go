// Package controllers owns scaleplane's reconcilers for profiled workload
// kinds: one controller per compiled profile that fans R out to the member groups
// (C1), keeps status.replicas and the /scale selector truthful (C2, C3) and
// runs the built-in HPA's lifecycle next to foreign autoscalers (C4, C5).
//
// Each policy lives in its own file (fanout.go, status.go, hpa.go,
// foreign.go). Decisions are made by package scaling; this package only
// reads objects through a profile.Compiled, asks scaling, and writes the result
// with one write per policy: a merge patch with optimistic concurrency for
// the spec, server-side apply under v1alpha1.FieldManager for status and the
// HPA. It compares before writing and emits events only after a write
// succeeded.
//
// It must not make scaling decisions, edit objects it does not own (a
// user's HPA or KEDA ScaledObject), or write fields outside the contract.
package controllers
