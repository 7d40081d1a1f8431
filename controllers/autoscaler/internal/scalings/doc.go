// Package scalings writes the autoscaler's Scaling objects (api/v1alpha1)
// and names them. Writer is the leader's writer: it takes the newest
// status of every workload (Offer) and applies it only when it changed,
// within a bucket per workload, one per namespace (the tenant's share,
// borrowed past for what the other namespaces leave unused, shares.go)
// and one for the process. ActivityWriter records the activity signal in
// a Scaling's status.lastActivity from any replica, within a bucket for
// the replica and one per namespace under it, borrowed past the same way. Watch, on the leader, learns
// whether Scalings are served, renames the Scalings of names without the
// group (Migrate) and wakes the loop when a Scaling's activity moves or it
// is deleted. Name, LegacyName and Object say where a workload's Scaling
// lives and what it holds besides its status; Fingerprints tell two
// statuses apart.
//
// The package is the Scaling writer of package autoscaler, which builds
// the statuses (package status) and calls it; it knows no workload kind,
// loop or endpoint: the loop's side is Watch.Wake.
// It must not decide anything (the status it is given is written as it
// is), write any object but Scalings, or call the API server while holding
// its lock.
package scalings
