// Package convert maps a KEDA ScaledObject to the scaleplane scale config
// and annotations of its target workload: a pure function from a decoded
// ScaledObject to a Result that names, field by field, what could not be
// converted and why.
//
// Convert is the mapping; Render puts a Result on a partial object of the
// target, where the kind's profile keeps its config, and checks it with the
// admission rules (scaling.Validate) as the webhook reads it. The package
// reads no file and no cluster: `scaleplane convert` (cmd/scaleplane) does,
// and prints what Render returns. It does not import KEDA: the
// ScaledObject is decoded into the small local ScaledObject type.
package convert
