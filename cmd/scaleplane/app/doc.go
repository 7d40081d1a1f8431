// Package app assembles scaleplane's manager: webhook server with certificate
// rotation, the admission webhooks, the controllers, the metrics pipeline
// and the trigger autoscaler, health checks and leader election. The
// scaleplane binary, `scaleplane dev` and the e2e tests all build their
// manager here, so every path runs the same wiring.
//
// It only wires: every behaviour lives in the packages it calls.
package app
