// Package scaleplane is the library entry point for operator authors: it
// sets up scaleplane's admission webhooks and controllers for the kinds an
// operator owns, one kind at a time, on the operator's own manager, in the
// style of controller-runtime's builder:
//
//	sp, err := scaleplane.New(mgr, scaleplane.Options{Owner: "cache-operator"})
//	err = sp.For(&cachev1.CacheCluster{}).
//		WithProfile(v1alpha1.ScaleProfileSpec{ScaleConfig: ...}).
//		Complete()
//
// The kind's group, version and kind come from the manager's scheme, its
// resource from the manager's RESTMapper, and the /scale paths (replicas,
// status replicas, selector) from the served CRD's scale subresource when
// the profile leaves them out. The kind is watched as the scheme knows it
// (typed objects stay typed, one informer shared with the operator's own
// controllers), and the manager's controller options are honoured.
//
// Owner names the embedder: the webhook configurations it keeps are
// <owner>-mutating-webhook-configuration and
// <owner>-validating-webhook-configuration, labelled
// scaleplane.io/owner=<owner>, with entries named
// <resource>.<version>.<group>.<owner>.scaleplane.io; its sync touches
// nothing else, so the scaleplane binary (owner scaleplane) and any number
// of embedding operators share a cluster.
//
// Triggers (event-driven scaling) need the trigger autoscaler that package
// controllers/autoscaler builds; WithAutoscaler takes it. Without it, a
// workload with triggers is refused at admission with an error that says
// so. This package does not import the autoscaler, so an operator that does
// not use triggers links no PromQL engine.
//
// It must not decide anything (package scaling does) or hold state outside
// the manager it is given.
package scaleplane
