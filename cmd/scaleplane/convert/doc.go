// Package convert maps a KEDA ScaledObject to the scaleplane scale config
// and annotations of its target workload: a pure function from a decoded
// ScaledObject to a Result that names, field by field, what could not be
// converted and why.
//
// It owns the mapping only. It reads no file and no cluster, and does not
// validate the config it builds: `scaleplane convert` (cmd/scaleplane)
// reads the objects and checks every Result with the admission rules
// (scaling.Validate) before printing it. It does not import KEDA: the
// ScaledObject is decoded into the small local ScaledObject type.
package convert
