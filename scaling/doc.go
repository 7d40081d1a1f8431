// Package scaling owns every scaling decision scaleplane makes, as pure
// functions of plain values: the scale config type, admission defaulting
// (contract rules M1–M6) and validation (V1–V11, W1–W2), the controller
// decisions (fan-out C1, status C2, HPA existence C4), and the built-in
// autoscaler's arithmetic (the HPA replica algorithm with behaviors,
// scale-to-zero and schedules). It also defines trigger sources ([Source],
// [Sources]) and the built-in [CronSource], and translates SlimFaas's
// annotations into a config ([FromSlimFaas], slimfaas.go), with SlimFaas's
// own decisions where they differ from an HPA's (docs/slimfaas.md).
//
// It must not talk to a cluster: no client, no clock it did not receive, no
// goroutines. Webhooks and controllers translate objects into a [Workload],
// ask this package what to do, and write the answer. It knows no query
// language and must not import one: what a query source checks comes in
// with the [Sources] its caller passes, and nothing is registered
// process-wide.
package scaling
