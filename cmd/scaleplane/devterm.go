//go:build !nodev

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/scaleplane/scaleplane/cmd/scaleplane/devworld"
	"github.com/scaleplane/scaleplane/webhooks"
)

// terminal is what a person running `scaleplane dev` reads once it is
// ready: one timestamped line per thing that happens, as it happens.
// Controller-runtime's logs go to a file (see devMain); these lines come
// from scaleplane's events, from the webhooks (a review hook: the request
// is already decoded), from the metrics server (activity signals) and from
// dev's sample pods.
type terminal struct {
	mu  sync.Mutex
	now func() time.Time
	// since: events older than this (a reused data folder's) are not news.
	since time.Time
	// started is false until the ready banner is out; lines wait in
	// pending (at most maxPendingLines) so they do not split the banner.
	started bool
	pending []string
	// lines go to out through a writer goroutine: a line is printed from
	// an admission review or a reconcile, which must never wait for a
	// terminal that does not read (Ctrl-S, a full pipe). Past
	// maxQueuedLines waiting, lines are dropped and counted.
	lines   chan string
	dropped int
	done    chan struct{}
}

const (
	// maxPendingLines bounds what waits for the banner.
	maxPendingLines = 200
	// maxQueuedLines bounds what waits for the terminal.
	maxQueuedLines = 1024
)

// newTerminal starts the terminal's writer; stop ends it.
func newTerminal(out io.Writer, since time.Time) *terminal {
	lines := make(chan string, maxQueuedLines)
	t := &terminal{now: time.Now, since: since, lines: lines, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		for l := range lines {
			_, _ = io.WriteString(out, l)
		}
	}()
	return t
}

// start prints what waited for the banner, and every line from now on.
func (t *terminal) start() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.started = true
	more := t.dropped
	t.dropped = 0
	for _, l := range t.pending {
		t.enqueue(l)
	}
	if more > 0 {
		t.enqueue(fmt.Sprintf("(%d more lines while starting; see the log)\n", more))
	}
	t.pending = nil
}

// stop prints what is queued and ends the writer; later lines are
// dropped.
func (t *terminal) stop() {
	t.mu.Lock()
	if t.lines != nil {
		close(t.lines)
		t.lines = nil
	}
	t.mu.Unlock()
	<-t.done
}

// enqueue hands l to the writer without waiting; t.mu is held.
func (t *terminal) enqueue(l string) {
	if t.lines == nil {
		return
	}
	if t.dropped > 0 && t.started {
		select {
		case t.lines <- fmt.Sprintf("(%d lines dropped: the terminal was not reading)\n", t.dropped):
			t.dropped = 0
		default:
			t.dropped++
			return
		}
	}
	select {
	case t.lines <- l:
	default:
		t.dropped++
	}
}

// line prints "15:04:05  tag       object  text".
func (t *terminal) line(at time.Time, tag, object, text string) {
	l := fmt.Sprintf("%s  %-9s %s  %s\n", at.Local().Format("15:04:05"), tag, object, oneLine(text))
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.started:
		t.enqueue(l)
	case len(t.pending) < maxPendingLines:
		t.pending = append(t.pending, l)
	default:
		t.dropped++
	}
}

// oneLine keeps a note on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// admission prints refusals with every field cause, and warnings.
func (t *terminal) admission(_ context.Context, r webhooks.Review) {
	req := r.Request
	object := req.Kind.Kind + " " + namespaced(req.Namespace, req.Name)
	if req.SubResource != "" {
		object = req.Resource.Resource + "/" + req.SubResource + " " + namespaced(req.Namespace, req.Name)
	}
	dry := ""
	if req.DryRun != nil && *req.DryRun {
		dry = " (dry run)"
	}
	now := t.now()
	if !r.Response.Allowed {
		t.line(now, "refused", object, strings.ToLower(string(req.Operation))+dry+": "+refusal(r))
	}
	for _, w := range r.Response.Warnings {
		t.line(now, "warning", object, w+dry)
	}
}

// refusal is an admission refusal's causes, "field: message" each, or its
// message when it has none.
func refusal(r webhooks.Review) string {
	res := r.Response.Result
	if res == nil {
		return "refused"
	}
	if res.Details != nil && len(res.Details.Causes) > 0 {
		parts := make([]string, 0, len(res.Details.Causes))
		for _, c := range res.Details.Causes {
			parts = append(parts, c.Field+": "+c.Message)
		}
		return strings.Join(parts, "; ")
	}
	return res.Message
}

// metricsRequest prints each activity signal with its answer.
func (t *terminal) metricsRequest(r *http.Request, status int) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/activity/")
	if !ok {
		return
	}
	object := rest
	if parts := strings.Split(rest, "/"); len(parts) == 3 {
		object = parts[1] + " " + parts[0] + "/" + parts[2]
	}
	t.line(t.now(), "activity", object, fmt.Sprintf("%s /activity -> %d %s", r.Method, status, http.StatusText(status)))
}

// pods prints what dev's sample pods did.
func (t *terminal) pods(n devworld.Notice) {
	t.line(n.Time, "pods", n.Kind+" "+namespaced(n.Namespace, n.Name), n.Message)
}

// watchEvents prints scaleplane's events (and the HPA controller's
// rescales) until ctx ends. events.k8s.io/v1 and core/v1 Events are one
// resource in the API server, so one watch sees both the controllers'
// (core/v1 recorder) and the autoscaler's (events.k8s.io recorder).
func (t *terminal) watchEvents(ctx context.Context, cfg *rest.Config) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("events client: %w", err)
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Events().V1().Events().Informer()
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if e, ok := obj.(*eventsv1.Event); ok && !eventTime(e).Before(t.since) {
				t.event(e, 1)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*eventsv1.Event)
			n, ok2 := newObj.(*eventsv1.Event)
			// A repeat raises the count; a relist delivers the same one.
			if ok1 && ok2 && eventCount(n) > eventCount(o) {
				t.event(n, eventCount(n))
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watch events: %w", err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return nil
}

func (t *terminal) event(e *eventsv1.Event, count int32) {
	tag, ok := eventTag(e)
	if !ok {
		return
	}
	note := strings.TrimPrefix(e.Note, "(combined from similar events): ")
	if count > 1 {
		note += fmt.Sprintf(" (x%d)", count)
	}
	t.line(eventTime(e), tag, e.Regarding.Kind+" "+namespaced(e.Regarding.Namespace, e.Regarding.Name), note)
}

// eventTag is the line's tag for an event, and whether it is one to show:
// every event scaleplane reports, and the HPA controller's rescales.
func eventTag(e *eventsv1.Event) (string, bool) {
	reporter := e.ReportingController
	if reporter == "" {
		reporter = e.DeprecatedSource.Component
	}
	if e.Reason == "SuccessfulRescale" {
		return "hpa-scale", true
	}
	if !strings.HasPrefix(reporter, "scaleplane") {
		return "", false
	}
	if e.Type == "Warning" {
		return "warning", true
	}
	switch e.Reason {
	case "Scaled":
		switch {
		case strings.Contains(e.Note, " pinned "):
			// The fan-out of a kind without member groups.
			return "fan-out", true
		case strings.HasPrefix(e.Note, "Woke up"):
			return "wake-up", true
		case strings.HasPrefix(e.Note, "Scaled to zero"):
			return "to-zero", true
		}
		return "scale", true
	case "ScaledGroups":
		return "fan-out", true
	case "StatusReplicasUpdated":
		return "status", true
	case "HPAApplied", "HPADeleted":
		return "hpa", true
	}
	return strings.ToLower(e.Reason), true
}

// eventTime is when an event last happened, whichever API wrote it.
func eventTime(e *eventsv1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.DeprecatedLastTimestamp.IsZero():
		return e.DeprecatedLastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// eventCount is how many times an event happened, whichever API wrote it.
func eventCount(e *eventsv1.Event) int32 {
	n := max(e.DeprecatedCount, 1)
	if e.Series != nil {
		n = max(n, e.Series.Count)
	}
	return n
}

func namespaced(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
