// Package config owns scaleplane's component configuration: the Go types of
// the file given with --config, their defaults and validation, and the
// profiles that say where a workload kind keeps its replicas, scale config
// and groups. A profile turns an unstructured object into a
// [scaling.Workload] and writes decisions back, touching only the fields the
// contract lets scaleplane own. It holds the one decoder of the scale
// config (decode.go): every reader, the webhooks, the controllers and the
// autoscaler, goes through View.Read, and an annotation's text through
// DecodeConfigJSON.
//
// The kustomize manifests live beside this package, in the folders crd,
// default, manager, rbac, webhook, certmanager and samples.
//
// It must not make decisions (that is package scaling) or talk to a cluster.
package config
