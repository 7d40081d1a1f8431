//go:build !nodev

package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/scaleplane/scaleplane/cmd/scaleplane/devworld"
	"github.com/scaleplane/scaleplane/webhooks"
)

var termNow = time.Date(2026, 6, 1, 12, 0, 5, 0, time.Local)

func testTerminal() (*terminal, *bytes.Buffer) {
	var out bytes.Buffer
	t := newTerminal(&out, termNow.Add(-time.Minute))
	t.now = func() time.Time { return termNow }
	return t, &out
}

// lines stops the terminal (printing what is queued) and returns its lines.
func lines(t *terminal, b *bytes.Buffer) []string {
	t.stop()
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// TestTerminalLines: one timestamped line per thing that
// happens, from each source: a refusal with every field, a warning, an
// activity signal, pods, and scaleplane's events (not others').
func TestTerminalLines(t *testing.T) {
	term, out := testTerminal()
	term.start()
	errs := field.ErrorList{
		field.Invalid(field.NewPath("spec", "scaleConfig", "minReplicas"), 5, "must be less than or equal to maxReplicas (2)"),
		field.Duplicate(field.NewPath("spec", "racks").Index(1).Child("name"), "a"),
	}
	st := apierrors.NewInvalid(schema.GroupKind{Group: "samples.scaleplane.io", Kind: "RackedCluster"}, "broken", errs).Status()
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Kind: metav1.GroupVersionKind{Kind: "RackedCluster"}, Namespace: "default", Name: "broken", Operation: admissionv1.Create,
	}}
	term.admission(context.Background(), webhooks.Review{Webhook: "validate", Request: req,
		Response: admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &st}}})
	term.admission(context.Background(), webhooks.Review{Webhook: "mutate", Request: req, Response: admission.Allowed("").WithWarnings("spec.replicas (1) is outside [2, 6]")})
	term.admission(context.Background(), webhooks.Review{Webhook: "mutate", Request: req, Response: admission.Allowed("")})
	term.metricsRequest(httptest.NewRequest(http.MethodPost, "/activity/default/rackedclusters/web", nil), http.StatusAccepted)
	term.metricsRequest(httptest.NewRequest(http.MethodGet, "/debug/store", nil), http.StatusOK)
	term.pods(devworld.Notice{Time: termNow, Kind: "RackedCluster", Namespace: "default", Name: "web", Message: "3/3 pods ready"})
	ev := func(reporter, typ, reason, note string) *eventsv1.Event {
		return &eventsv1.Event{ReportingController: reporter, Type: typ, Reason: reason, Note: note, EventTime: metav1.NewMicroTime(termNow),
			Regarding: corev1.ObjectReference{Kind: "RackedCluster", Namespace: "default", Name: "web"}}
	}
	term.event(ev("scaleplane-autoscaler", "Normal", "Scaled", "Woke up from 0 to 1: activity at 12:00:04"), 1)
	term.event(ev("scaleplane-autoscaler", "Normal", "Scaled", "Scaled up from 1 to 4: rps=35 > 10 per replica"), 1)
	term.event(ev("scaleplane-autoscaler", "Normal", "Scaled", "Scaled to zero from 1: no activity for 30s"), 1)
	legacy := ev("", "Normal", "ScaledGroups", "spec.racks[*].members a=1 -> 4")
	legacy.DeprecatedSource.Component = "scaleplane-controller"
	term.event(legacy, 2)
	term.event(ev("scaleplane-autoscaler", "Warning", "InvalidTrigger", "invalid triggers keep the count: rps: no data"), 1)
	term.event(ev("kubelet", "Normal", "Pulled", "not ours"), 1)

	want := []string{
		`12:00:05  refused   RackedCluster default/broken  create: spec.scaleConfig.minReplicas: Invalid value: 5: must be less than or equal to maxReplicas (2); spec.racks[1].name: Duplicate value: "a"`,
		`12:00:05  warning   RackedCluster default/broken  spec.replicas (1) is outside [2, 6]`,
		`12:00:05  activity  rackedclusters default/web  POST /activity -> 202 Accepted`,
		`12:00:05  pods      RackedCluster default/web  3/3 pods ready`,
		`12:00:05  wake-up   RackedCluster default/web  Woke up from 0 to 1: activity at 12:00:04`,
		`12:00:05  scale     RackedCluster default/web  Scaled up from 1 to 4: rps=35 > 10 per replica`,
		`12:00:05  to-zero   RackedCluster default/web  Scaled to zero from 1: no activity for 30s`,
		`12:00:05  fan-out   RackedCluster default/web  spec.racks[*].members a=1 -> 4 (x2)`,
		`12:00:05  warning   RackedCluster default/web  invalid triggers keep the count: rps: no data`,
	}
	if diff := cmp.Diff(want, lines(term, out)); diff != "" {
		t.Errorf("terminal (-want +got):\n%s", diff)
	}
}

// TestLinesWaitForBanner: lines before the ready banner are
// held and printed after it, within a bound.
func TestLinesWaitForBanner(t *testing.T) {
	term, out := testTerminal()
	for i := range maxPendingLines + 3 {
		term.line(termNow, "pods", "x", strings.Repeat("y", i%3))
	}
	term.mu.Lock()
	queued := len(term.lines)
	term.mu.Unlock()
	if queued != 0 {
		t.Fatalf("%d lines queued before the banner", queued)
	}
	out.WriteString("banner\n")
	term.start()
	got := lines(term, out)
	if len(got) != 1+maxPendingLines+1 || got[0] != "banner" || got[len(got)-1] != "(3 more lines while starting; see the log)" {
		t.Errorf("after the banner: %d lines, first %q, last %q", len(got), got[0], got[len(got)-1])
	}
}

// TestEventCountAndTime: repeats are counted and timed the
// same whichever API (core/v1 or events.k8s.io/v1) wrote the event.
func TestEventCountAndTime(t *testing.T) {
	t1, t2 := termNow.Add(-time.Minute), termNow
	legacy := &eventsv1.Event{DeprecatedCount: 3, DeprecatedLastTimestamp: metav1.NewTime(t2), EventTime: metav1.NewMicroTime(t1)}
	series := &eventsv1.Event{EventTime: metav1.NewMicroTime(t1), Series: &eventsv1.EventSeries{Count: 4, LastObservedTime: metav1.NewMicroTime(t2)}}
	single := &eventsv1.Event{EventTime: metav1.NewMicroTime(t1)}
	got := []any{eventCount(legacy), eventTime(legacy).Equal(t2), eventCount(series), eventTime(series).Equal(t2), eventCount(single), eventTime(single).Equal(t1)}
	if diff := cmp.Diff([]any{int32(3), true, int32(4), true, int32(1), true}, got); diff != "" {
		t.Errorf("count and time (-want +got):\n%s", diff)
	}
}

// TestTerminalNeverBlocks: a terminal that does not read never
// holds up the line's caller (an admission review, a reconcile): past the
// queue's bound lines are dropped, and the count is printed once it reads
// again.
func TestTerminalNeverBlocks(t *testing.T) {
	pr, pw := io.Pipe()
	term := newTerminal(pw, termNow)
	term.start()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range maxQueuedLines + 50 {
			term.line(termNow, "pods", "x", "y")
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("line blocked on a terminal that does not read")
	}
	term.mu.Lock()
	dropped := term.dropped
	term.mu.Unlock()
	if dropped < 49 {
		t.Errorf("dropped %d lines, want at least 49 of %d past a queue of %d", dropped, maxQueuedLines+50, maxQueuedLines)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	term.line(termNow, "pods", "x", "after")
	term.stop()
	_ = pw.Close()
}
