// Package policies is the e2e test of admission by the API server's own
// policies (package policies): the sample RackedCluster's policies are
// installed on a control plane where no scaleplane process runs, and
// creates and updates are defaulted, fanned out and validated by the API
// server alone (the other sample kinds and e2e/admission's ZonedDatabase
// too), each compared with what the webhook's decisions
// (scaling.Default and scaling.Validate) make of the same object.
package policies
