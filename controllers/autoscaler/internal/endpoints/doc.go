// Package endpoints serves the trigger autoscaler's two HTTP endpoints,
// mounted on the manager's metrics server behind its authentication and
// authorization: POST /activity/{namespace}/{resource}/{name} records
// activity (a gateway waking a function from zero) and
// GET /debug/autoscaler/{namespace}/{resource}/{name} explains the last
// decisions. It owns the paths, the checks of what a request may carry
// (no body, names an object can have) and the JSON bodies (Explanation,
// ActivityResponse, errors); what is recorded and explained is the
// autoscaler's, through the Loop interface.
//
// It must not read the cluster, keep memory of a workload, or answer
// before the checks of the request: a request that no object can match is
// refused before the loop is asked.
package endpoints
