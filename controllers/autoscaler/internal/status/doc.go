// Package status builds the status of a workload's Scaling (api/v1alpha1)
// from what the autoscaler's loop knows of it (Input: the workload, its
// State, the last decision, the History), and reads a Scaling's history
// back into the scaling.History a new leader restores before its first
// decision (HistoryFromStatus). State is what the loop does with a
// workload, as the Scaling and the explain endpoint show it.
//
// Every function is pure: values in, values out, no client and no clock.
// It must not decide a count (package scaling does), write anything
// (package scalings writes what Build returns), or guess a reason it
// cannot compute from its input.
package status
