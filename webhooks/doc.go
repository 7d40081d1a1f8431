// Package webhooks owns scaleplane's admission for profiled workload kinds:
// a mutating and a validating webhook on each kind's main resource (contract
// rules M1–M6, V1–V11, W1–W2) and a validating webhook on its /scale
// subresource (S1), plus the webhook configurations that route requests to
// them and a start-up sync that keeps those configurations' rules in line
// with the profiles.
//
// Handlers work on unstructured objects through a [profile.Compiled]: they
// decode the request's object as the API machinery does (sigs.k8s.io/json,
// only the fields a compiled profile reads), read it with
// [profile.Compiled.Read], the one decoder of the scale config that the
// controllers use too, so validation and defaulting never disagree on what
// a config says; let package scaling
// decide, and translate the answer back into a JSON patch or into one 422
// Invalid that lists every field error. The patch is defined as the
// jsonpatch diff of the decoded object before and after Compiled.WriteSpec,
// for every request; only the decode is a fast path (see decoder).
// Warnings (W1, W2) travel as admission warnings, which kubectl prints.
//
// It must not make scaling decisions of its own (that is package scaling)
// and must not write workloads: a /scale write is only checked here, the
// fan-out to groups happens in the controllers, because a /scale write never
// reaches the main resource's webhooks.
//
// Paths on the webhook server are derived from the profile's resource, so
// that the webhook configurations, the kustomize manifests in
// config/webhook and the server always agree:
//
//	/mutate-<group>-<version>-<resource>          CREATE, UPDATE of the resource
//	/validate-<group>-<version>-<resource>        CREATE, UPDATE of the resource
//	/validate-scale-<group>-<version>-<resource>  UPDATE of <resource>/scale
//
// where dots in the group become dashes (the empty core group is "core").
// Webhook entries are named "<resource>.<version>.<group>", and
// "scale.<resource>.<version>.<group>" for /scale.
//
// The HTTP side is this package's too (server.go): Setup serves every hook
// with a strict AdmissionReview transport that answers what is not an API
// server's review with an HTTP error (400 without request.uid, 405, 413,
// 415) instead of controller-runtime's allowed answer, and NewServer is a
// webhook server bounded by package serving (timeouts, body and in-flight
// limits, HTTP/2 off unless asked for).
//
// Decisions where the contract is silent, for docs and reviewers:
//
//   - An object whose scaling fields cannot be read is allowed by the
//     mutating webhook without a patch; the validating webhook refuses it
//     with every field error (one place for all admission errors).
//   - Validation ratchets like the API server's CRD validation: an UPDATE
//     that keeps the stored scaling fields is allowed even if they no longer
//     pass, with the old problems as warnings, so finalizers can always be
//     removed after a profile is tightened. A config that cannot be read is
//     kept only when it is the stored one (profile.Compiled.SameScalingFields);
//     one that appears or changes is judged as on CREATE.
//   - A config with fields that cannot be decoded is still validated as far
//     as it reads (profile.Compiled.ReadPartly), so one refusal lists every
//     problem, as for a readable config.
//   - /scale refusals name the kind's own replicas field, where the count
//     lands, and give only advice the schema accepts.
//   - The /scale webhook also refuses counts above the profile's upper bound
//     (V1), which the main resource's webhook would otherwise only see on
//     the next edit, and does not judge a write that keeps the count. For a
//     kind whose HPA targets a child (Kyma) it does not apply the range: a
//     count written through /scale selects external scaling, where the
//     config is ignored (W2).
//   - The /scale webhook reads the parent from the manager's cache, and
//     through the API when the cache does not hold the version the Scale
//     was built from, so a range widened a moment ago is honoured.
//   - Patches are sorted by path, so the same request gives the same bytes
//     (M6); defaulting never adds or removes list items, so order is free.
//   - The mutating webhook asks to be reinvoked (IfNeeded) when a later
//     webhook changes the object, so groups follow a replicas count another
//     webhook set (M5).
package webhooks
