// Package policies compiles a profile into the API server's own admission
// policies (admissionregistration.k8s.io/v1): a ValidatingAdmissionPolicy
// that enforces the validation rules CEL can express (V1, V2, V4, V8) and a
// MutatingAdmissionPolicy that does the defaulting and the fan-out (M1–M5,
// and M7 with the limits of the CRD the profile was compiled with),
// each with its binding. The API server runs them in CEL, with no call to
// scaleplane, so they keep working while scaleplane is down.
//
// What CEL cannot decide stays with the webhook: metrics, triggers and
// their PromQL (V3, V5–V7, V10, V11), a behavior's tolerance, a config held in an
// annotation (V9: its text is JSON the policies do not parse), and M7's
// schema checks; docs/design.md lists each. WebhookCondition is the match
// condition that sends exactly those writes to the webhook when the
// policies are on; ForOwner names and labels a set for the owner that
// syncs it (package webhooks writes and deletes them).
//
// It builds objects only: it must not talk to a cluster or make decisions
// the webhook does not make (package scaling holds them).
package policies
