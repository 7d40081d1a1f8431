package autoscaler

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/scalings"
	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/status"
	"github.com/scaleplane/scaleplane/promql"
)

// The names this package's users know from before its Scaling writer was
// a package of its own (internal/scalings); doc.go draws the seams.

// ScalingGVK is the Scaling kind.
var ScalingGVK = scalings.GVK

// ScalingWrites bounds the Scaling writes. Zero values take the defaults.
type ScalingWrites = scalings.Writes

// ScalingName is the name of a workload's Scaling:
// <workload>-<kind lower>.<group>, so that two kinds of one name in two
// API groups never share one (scalings.Name).
func ScalingName(workload string, gk schema.GroupKind) string { return scalings.Name(workload, gk) }

// ActivityWriteQPS and ActivityWriteBurst bound one replica's writes of
// activity to Scalings.
const (
	ActivityWriteQPS   = scalings.ActivityWriteQPS
	ActivityWriteBurst = scalings.ActivityWriteBurst
)

// MaxActivitySkew is how far in the future an activity time may lie: a
// later one is refused (scalings.ActivityTime).
const MaxActivitySkew = scalings.MaxActivitySkew

// ScrapeWorkload is the package's ScrapeWorkload, as a method: the
// external scaler asks it of the autoscaler it runs beside
// (externalscaler.Targets), so that it scrapes and labels a ScaledObject's
// target as the autoscaler does its own workloads.
func (a *Autoscaler) ScrapeWorkload(kind string, podLabels map[string]string, namespace, name string) promql.Workload {
	return ScrapeWorkload(kind, podLabels, namespace, name)
}

// State says what the autoscaler does with a workload (status.State); it
// is shown by the explain endpoint and the Scaling.
type State = status.State

// The states of a workload (status.State).
const (
	StateAutoscaling = status.StateAutoscaling
	StateNotManaged  = status.StateNotManaged
	StatePaused      = status.StatePaused
	StateHeld        = status.StateHeld
	StateForeign     = status.StateForeign
	StateUnreadable  = status.StateUnreadable
)
