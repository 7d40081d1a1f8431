// Package devworld plays, for `scaleplane dev` only, the two parts of a
// cluster that the embedded control plane lacks: the sample kinds'
// operators and the kubelet. For every RackedCluster, Function and
// WorkerGroup it keeps one Pod object per member (RackedCluster: per member
// of each rack; Function: per replica of the runtime Deployment it creates,
// as Kyma's operator does; WorkerGroup: one leader per replica), labelled as
// the kind's profile says, and reports their readiness in the workload's
// status as the real operator would (status.racks[].readyMembers;
// status.replicas and readyReplicas), so scaleplane's status rule (C2) and
// the HPA see what they see in a cluster.
//
// Each pod is served by a loopback HTTP server in this process: GET /metrics
// is real Prometheus exposition of that pod's own registry (a request
// counter http_requests_total and a latency histogram
// http_request_duration_seconds), and every other path is "work" that
// increments the counter and observes its latency. The pod carries podIP
// 127.0.0.1 and prometheus.io/scrape, port and path annotations, so
// scaleplane's scraper finds and reads it like any pod; it becomes Running
// and Ready (status subresource) after a start-up delay, as a kubelet would
// report it. A pod deleted from the API has its server stopped; pods beyond
// a workload's desired count are deleted; a deleted workload loses all of
// them; every server stops when Start returns.
//
// It must not run anywhere but in `scaleplane dev`: New refuses an API
// server that is not on a loopback address, the in-cluster binary path
// (package app) does not import it, and nothing it serves listens off
// 127.0.0.1. It must not touch pods it did not create (they carry
// LabelManagedBy=ManagedByValue and a controller reference to their
// workload), nor decide anything scaleplane decides.
package devworld
