// Package workers holds what the autoscaler's loop knows of its
// reconcile workers: each namespace's share of a kind's workers (Shares),
// the reconciles in flight for the worker gauges (InFlight), and calls
// bounded in time on goroutines kept between calls (Bounded, RunDetached),
// so that a scaler that ignores its context never holds a worker.
//
// It knows no workload, kind or client. It must not hold its locks while
// calling anything that can block, nor wait for a call past its timeout.
package workers
