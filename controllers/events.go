package controllers

import (
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// EventRecorder is the one recorder of the controllers and the autoscaler:
// the manager's core/v1 recorder under EventRecorderName. Not the
// events.k8s.io/v1 one, whose series keep the first note of a repeated
// reason about one object, so a second fan-out's sizes or a later "Scaled"
// would show a stale message; core/v1's correlator keeps the newest.
func EventRecorder(mgr manager.Manager) record.EventRecorder {
	return mgr.GetEventRecorderFor(EventRecorderName) //nolint:staticcheck // see the doc comment: the core/v1 recorder on purpose
}
