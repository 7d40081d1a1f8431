// Package scaling owns every scaling decision scaleplane makes, as pure
// functions of plain values: the scale config type, admission defaulting
// (contract rules M1–M6) and validation (V1–V9, W1–W2), the controller
// decisions (fan-out C1, status C2, HPA existence C4), and the built-in
// autoscaler's arithmetic (the HPA replica algorithm with behaviors,
// scale-to-zero and schedules).
//
// It must not talk to a cluster: no client, no clock it did not receive, no
// goroutines. Webhooks and controllers translate objects into a [Workload],
// ask this package what to do, and write the answer.
package scaling
