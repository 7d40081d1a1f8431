package autoscaler

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/status"
	"github.com/scaleplane/scaleplane/scaling"
)

// The pure policies of the autoscaler loop: values in, values out, no
// client and no clock. tick.go applies them.

// manages decides whether the trigger autoscaler owns w's count, and if not,
// why. It never runs where the built-in HPA would (C4 decides that with the
// same function, scaling.DecideHPA), nor on a pinned config: the fan-out
// re-pins a pinned config to R, so writing R there would rewrite the
// user's bounds.
func manages(w scaling.Workload, l scaling.Layout, defaultMetrics []autoscalingv2.MetricSpec) (bool, string) {
	c := w.Config
	switch {
	case c == nil:
		return false, "no scale config"
	case len(c.Triggers) == 0 && c.Idle == nil:
		return false, "scale config has neither triggers nor idle settings"
	case len(c.Metrics) > 0:
		return false, "scale config has metrics: the built-in HPA scales this workload"
	case c.Pinned():
		return false, fmt.Sprintf("scale config is pinned at %d: no autoscaling range", *c.MinReplicas)
	case w.Replicas == nil:
		return false, fmt.Sprintf("%s is not set: nothing to scale through /scale", pathOr(l.ReplicasPath, "replicas"))
	}
	if d := scaling.DecideHPA(w, l, defaultMetrics, nil); d.Want {
		return false, "the built-in HPA scales this workload (the profile's default metrics apply)"
	}
	return true, ""
}

// foreignScalesNote says who scales a workload the trigger autoscaler does
// not manage when foreign autoscalers target it, and what scaleplane does
// beside them.
func foreignScalesNote(foreign []string, w scaling.Workload, l scaling.Layout, defaultMetrics []autoscalingv2.MetricSpec) string {
	verb := "scales"
	if len(foreign) > 1 {
		verb = "scale"
	}
	note := fmt.Sprintf("%s %s this workload", strings.Join(foreign, ", "), verb)
	if scaling.DecideHPA(w, l, defaultMetrics, nil).Want {
		// C5: the built-in HPA the config asks for is not created beside it.
		note += "; scaleplane creates no built-in HPA beside it: remove it to let the scale config's metrics scale"
	}
	return note
}

func pathOr(p interface{ String() string }, def string) string { return status.PathOr(p, def) }

// pause is what the pause annotations ask for.
type pause struct {
	// Paused: hands off (scaleplane.io/paused: "true", or a bad
	// paused-replicas value: better to do nothing than guess).
	Paused bool
	// Hold is the count scaleplane.io/paused-replicas pins R to.
	Hold *int32
	// Problem says what to fix in a bad annotation.
	Problem string
}

// readPause reads the pause annotations as KEDA reads its own: a
// paused-replicas count wins over paused, and scales to that count once.
func readPause(ann map[string]string) pause {
	if v, ok := ann[v1alpha1.AnnotationPausedReplicas]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil || n < 0 {
			return pause{Paused: true, Problem: fmt.Sprintf("annotation %s is %q: set a whole number >= 0, or remove it to resume autoscaling",
				v1alpha1.AnnotationPausedReplicas, v)}
		}
		hold := int32(n)
		return pause{Paused: true, Hold: &hold}
	}
	if strings.EqualFold(strings.TrimSpace(ann[v1alpha1.AnnotationPaused]), "true") {
		return pause{Paused: true}
	}
	return pause{}
}

// pauseAnnotations are the annotations readPause reads, as
// u.GetAnnotations gives them (none when one annotation is not a string)
// but without copying the others on every tick; nil when it has none of
// them.
func pauseAnnotations(u *unstructured.Unstructured) map[string]string {
	ann, _, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "annotations")
	m, _ := ann.(map[string]any)
	var out map[string]string
	for key, v := range m {
		s, ok := v.(string)
		if !ok && v != nil {
			return nil
		}
		if key == v1alpha1.AnnotationPausedReplicas || key == v1alpha1.AnnotationPaused {
			if out == nil {
				out = make(map[string]string, 2)
			}
			out[key] = s
		}
	}
	return out
}

// pollingInterval is the workload's tick period: its own
// pollingIntervalSeconds when > 0, else the process default.
func pollingInterval(c *scaling.Config, def time.Duration) time.Duration {
	if c != nil && c.PollingIntervalSeconds != nil && *c.PollingIntervalSeconds > 0 {
		return time.Duration(*c.PollingIntervalSeconds) * time.Second
	}
	return def
}

// planTick says whether a reconcile at now runs a tick, and when to come
// back. Reconciles also happen on every watch event (our own /scale write,
// a status update from the fan-out), and a Value trigger computes from the
// current count: ticking on each of them would compound one stale sample
// into several scale-ups. So a tick runs only when it is due, or when
// something the user did (config, activity, pause) must be acted on now.
func planTick(now, last time.Time, interval time.Duration, urgent bool) (run bool, after time.Duration) {
	if last.IsZero() || urgent {
		return true, interval
	}
	due := last.Add(interval)
	if !now.Before(due) {
		return true, interval
	}
	return false, due.Sub(now)
}

// eventNote turns a decision's reason, written in the present ("Scale up
// from 2 to 6: rps=103 over 2 replicas is ..."), into the past tense of an
// event about a write that happened. Events notes are capped at 1 kB by the
// API server.
func eventNote(d scaling.Decision) string {
	r := d.Reason
	for _, p := range [...]struct{ from, to string }{
		{"Scale up ", "Scaled up "},
		{"Scale down ", "Scaled down "},
		{"Scale to zero ", "Scaled to zero "},
		{"Wake up ", "Woke up "},
	} {
		if strings.HasPrefix(r, p.from) {
			r = p.to + r[len(p.from):]
			break
		}
	}
	return truncate(r, maxNote)
}

// maxNote is the events.k8s.io/v1 note limit.
const maxNote = status.MaxNote

func truncate(s string, n int) string { return status.Truncate(s, n) }

// triggerProblems is the Warning worth raising about a decision's
// triggers, "" when none (status.TriggerProblems, which the Scaling's
// Fallback condition says too).
func triggerProblems(d scaling.Decision) string { return status.TriggerProblems(d) }

// warnings remembers the last Warning note per reason for one workload, so
// a condition that persists is reported once per change, not every tick.
type warnings map[string]string

// next reports whether note (for reason) should be emitted now, and records
// it. An empty note clears the reason, so the same problem coming back is
// reported again.
func (w warnings) next(reason, note string) bool {
	if note == "" {
		delete(w, reason)
		return false
	}
	if w[reason] == note {
		return false
	}
	w[reason] = note
	return true
}

// Warning reasons of kinds no webhook admits (built-in kinds such as
// apps/v1 Deployment, SlimFaas annotations).
const (
	// ReasonInvalidConfig: the scale config breaks a rule admission
	// would have refused it for; the autoscaler does not act on it.
	ReasonInvalidConfig = "InvalidScaleConfig"
	// ReasonSlimFaasSettingIgnored: a SlimFaas setting scaleplane does not
	// act on (docs/slimfaas.md).
	ReasonSlimFaasSettingIgnored = "SlimFaasSettingIgnored"
)

// unadmittedProblems applies the validating rules (scaling.Validate) to a
// workload of a kind without admission webhooks, "" when it passes or
// when the kind has webhooks (they judged it already).
func unadmittedProblems(admission bool, w scaling.Workload, l scaling.Layout, sources *scaling.Sources) string {
	if admission || w.Config == nil {
		return ""
	}
	errs, _ := scaling.Validate(w, l, sources)
	if len(errs) == 0 {
		return ""
	}
	return "scale config refused, as admission would refuse it: " + errs.ToAggregate().Error()
}

// slimFaasIgnoredNote names the SlimFaas settings of ann scaleplane does
// not act on, "" when there are none.
func slimFaasIgnoredNote(ann map[string]string) string {
	ignored := scaling.SlimFaasIgnored(ann)
	if len(ignored) == 0 {
		return ""
	}
	return "SlimFaas settings scaleplane does not act on: " + strings.Join(ignored, "; ")
}
