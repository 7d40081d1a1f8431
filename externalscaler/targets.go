package externalscaler

import "github.com/scaleplane/scaleplane/promql"

// Targets is what the server asks of the trigger autoscaler it runs
// beside, and all it asks: which pods of a ScaledObject's target to scrape
// for a trigger on the embedded store, and the labels their samples carry,
// so that a query reads alike in a scaleplane trigger and in KEDA. The
// package depends on this interface, not on the autoscaler.
type Targets interface {
	// ScrapeWorkload is what the scraper reads for workload name of kind
	// in namespace: its pods, found by podLabels (nil when the caller sets
	// the selector itself), and the labels added to every sample.
	ScrapeWorkload(kind string, podLabels map[string]string, namespace, name string) promql.Workload
}

// TargetsFunc is a function as Targets.
type TargetsFunc func(kind string, podLabels map[string]string, namespace, name string) promql.Workload

// ScrapeWorkload calls f.
func (f TargetsFunc) ScrapeWorkload(kind string, podLabels map[string]string, namespace, name string) promql.Workload {
	return f(kind, podLabels, namespace, name)
}
