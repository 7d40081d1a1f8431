// Package profiles activates the kinds ScaleProfile objects describe while
// scaleplane runs: a profile applied
// with kubectl becomes an active kind (webhooks through the dispatcher on
// every replica, the kind's controller on the leader, webhook entries
// resynced) and a deleted or broken one stops being one, with no restart;
// each profile's status says whether it is active and, if not, why
// (kubectl get sprof: TARGET, ACTIVE, REASON).
//
// Whether a profile may be active is Evaluate, a pure function of the
// profile, the other profiles and what the API server serves. It must not
// decide scaling (package scaling does) or write anything but ScaleProfile
// status and, through package webhooks, its owner's webhook entries.
package profiles
