// Package externalscaler serves KEDA's external scaler protocol
// (externalscaler.proto: IsActive, StreamIsActive, GetMetricSpec,
// GetMetrics, StreamMetricSpec) from scaleplane's trigger machinery, so a
// KEDA ScaledObject with a trigger of type external or external-push gets
// PromQL over pod metrics from scaleplane's embedded store, without a
// Prometheus server.
//
// A ScaledObject names scaleplane's address and a query in its trigger
// metadata; each call is answered by building the trigger's scaler with the
// same constructor, sources and evaluation limits as the built-in
// autoscaler, and the pods of the ScaledObject's target are scraped while
// KEDA keeps asking. The metadata keys are in Metadata*.
//
// The port answers whoever reaches it, so a call is answered only for a
// trigger the named ScaledObject declares (exactly the metadata sent), an
// embedded-store query reads only its ScaledObject's namespace, and every
// cost a caller controls is bounded: metadata and message size, triggers
// (in all and per namespace), streams (in all and per trigger) and
// evaluations running or waiting at once.
//
// The gRPC stubs in package pb are generated from KEDA's .proto by
// hack/tools/protogen (`make generate`); `make verify` fails when they
// differ from what it generates.
//
// It must not make scaling decisions (KEDA and its HPA do, from the numbers
// served here), write to the cluster, or keep state about a ScaledObject
// KEDA has stopped asking about.
package externalscaler
