package status

import (
	"sort"
	"strings"

	"github.com/scaleplane/scaleplane/scaling"
)

// State says what the autoscaler does with a workload; it is shown by the
// explain endpoint.
type State string

const (
	// StateAutoscaling: triggers are sampled and R is written every tick.
	StateAutoscaling State = "Autoscaling"
	// StateNotManaged: the scale config gives the autoscaler nothing to do
	// (no triggers or idle settings, metrics for the built-in HPA, pinned).
	StateNotManaged State = "NotManaged"
	// StatePaused: scaleplane.io/paused is "true"; hands off.
	StatePaused State = "Paused"
	// StateHeld: scaleplane.io/paused-replicas holds R at a count.
	StateHeld State = "PausedReplicas"
	// StateForeign: an HPA we do not own or a KEDA ScaledObject targets the
	// workload; two autoscalers on one count fight, so we stand down.
	StateForeign State = "ForeignAutoscaler"
	// StateUnreadable: the workload's fields do not read as the profile
	// says; the fan-out controller reports the field errors.
	StateUnreadable State = "Unreadable"
)

// TriggerProblems is the Warning worth raising about a decision's triggers,
// "" when none: each invalid trigger with its problem, sorted. "no data" at
// zero replicas is not a problem: a workload without pods has nothing to
// scrape, and reporting it would raise a Warning on every sleep.
func TriggerProblems(d scaling.Decision) string {
	var out []string
	for _, t := range d.Triggers {
		if t.Valid || (d.Current == 0 && t.Problem == "no data") {
			continue
		}
		out = append(out, t.Name+": "+t.Problem)
	}
	if len(out) == 0 {
		return ""
	}
	sort.Strings(out)
	return Truncate("invalid triggers keep the count: "+strings.Join(out, "; "), MaxNote)
}

// MaxNote is the events.k8s.io/v1 note limit.
const MaxNote = 1024

// Truncate is s cut to n bytes, "..." marking the cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// PathOr is p as a string, def when p is nil or empty.
func PathOr(p interface{ String() string }, def string) string {
	if p == nil {
		return def
	}
	if s := p.String(); s != "" {
		return s
	}
	return def
}
