// Package profile compiles profiles: a [v1alpha1.ScaleProfileSpec] says
// where a workload kind keeps its replicas, scale config and member groups,
// and Compile turns it, defaulted and validated, into a [Compiled] that
// reads an unstructured object into a [scaling.Workload] and writes
// decisions back, touching only the fields the contract lets scaleplane
// own. It holds the one decoder of the scale config (decode.go): every
// reader, the webhooks, the controllers and the autoscaler, goes through
// Compiled.Read, and an annotation's text through DecodeConfigJSON.
//
// A built-in kind (apps/v1 Deployment, StatefulSet; [BuiltIn]) gets no
// admission webhook ([Compiled.Admission]); its C lives in an annotation,
// as JSON or, with scaleConfig.format SlimFaas, as SlimFaas's own
// annotations, read through scaling.FromSlimFaas and never written back.
//
// The spec is the same wherever a profile comes from: a ScaleProfile
// object, the component configuration's profiles (api/config/v1alpha2), or
// Go code. Samples returns the sample kinds' profiles.
//
// It must not make decisions (that is package scaling) or talk to a cluster.
package profile
