// Package foreign finds the autoscalers the trigger autoscaler must not
// run beside, the way the HPA controller's C5 finds them (package
// controllers), but over the autoscaler's own HPA index (HPATargetIndex)
// so that neither depends on the other's registration: an HPA scaleplane
// does not control, or a KEDA ScaledObject, whose scale target is the
// workload (or the child its profile's HPA would scale). Beside one of
// them the trigger autoscaler stands down: two autoscalers writing one
// count fight.
//
// It reads the manager's cache and asks the RESTMapper whether KEDA is
// served at most once per interval. It must not write anything, or hold
// its lock while the RESTMapper asks the API server.
package foreign
