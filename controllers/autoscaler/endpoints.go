package autoscaler

import (
	"context"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/endpoints"
)

// The loop's side of the HTTP endpoints (package internal/endpoints, which
// owns the paths, the request checks and the bodies): what POST
// /activity/... records and what GET /debug/autoscaler/... shows.

// Handler serves the activity signal and the explain view. Mount it on the
// metrics server at ActivityPath and ExplainPath, where the server's
// authentication and authorization filter wraps it.
func (a *Autoscaler) Handler() http.Handler { return endpoints.Handler(loopEndpoints{a}) }

// Paths of the endpoints (prefixes, with a trailing slash, as the metrics
// server's mux wants them).
const (
	ActivityPath = endpoints.ActivityPath
	ExplainPath  = endpoints.ExplainPath
)

// The endpoints' bodies (package internal/endpoints).
type (
	// Record is one tick as the explain endpoint shows it.
	Record = endpoints.Record
	// Explanation is the body of GET /debug/autoscaler/{namespace}/{resource}/{name}.
	Explanation = endpoints.Explanation
	// ActivityResponse is the body of a successful POST /activity/...
	ActivityResponse = endpoints.ActivityResponse
)

// loopEndpoints is the autoscaler as the endpoints' Loop.
type loopEndpoints struct{ a *Autoscaler }

// Explain is what the loop knows of a workload: 404 until its first
// reconcile.
func (l loopEndpoints) Explain(resource string, nn types.NamespacedName) (Explanation, error) {
	k, err := l.a.kindFor(resource)
	if err != nil {
		return Explanation{}, err
	}
	st := k.lookup(nn.Namespace, nn.Name)
	if st == nil {
		return Explanation{}, &endpoints.Problem{Status: http.StatusNotFound, Message: "the autoscaler has not seen " + k.resource + " " + nn.Namespace + "/" + nn.Name +
			": check the name, or wait for its first reconcile"}
	}
	return st.explain(k), nil
}

// RecordActivity is the activity signal: the workload had activity now
// (a request reached a gateway, a message was enqueued). It wakes a
// workload at zero on its next tick, which is queued at once, and restarts
// its idle timer.
func (l loopEndpoints) RecordActivity(ctx context.Context, resource string, nn types.NamespacedName) (ActivityResponse, error) {
	a := l.a
	k, err := a.kindFor(resource)
	if err != nil {
		return ActivityResponse{}, err
	}
	e := a.env.Load()
	if e == nil {
		return ActivityResponse{}, &endpoints.Problem{Status: http.StatusServiceUnavailable, Message: "the autoscaler is starting; retry shortly"}
	}
	u := k.newObject()
	if err := e.cache.Get(ctx, nn, u); err != nil {
		if apierrors.IsNotFound(err) {
			return ActivityResponse{}, &endpoints.Problem{Status: http.StatusNotFound, Message: k.resource + " " + nn.String() + " not found: check the namespace and name"}
		}
		return ActivityResponse{}, &endpoints.Problem{Status: http.StatusServiceUnavailable, Message: "read " + k.resource + " " + nn.String() + ": " + err.Error()}
	}
	now := a.opts.Now()
	resp := ActivityResponse{Kind: k.kind, Namespace: nn.Namespace, Name: nn.Name, Recorded: now.UTC()}
	leader := e.leader()
	if leader {
		// The leader acts at once, before the durable write below: the
		// wake-up then waits for no API round trip (two, under every
		// other namespace's load on the API server). Only the leader keeps
		// memory of a workload: a replica that is not would keep it
		// forever (nothing reconciles there to forget it).
		st := k.get(nn)
		st.recordActivity(now)
		k.enqueue(st)
		resp.State = st.currentState()
	}
	// Durably, in the Scaling, whatever replica this is, before the
	// answer: the leader learns of it through its watch, a new leader
	// finds it.
	var durable error
	if e.activity != nil {
		durable = e.activity.Record(ctx, k.scalingKey(nn), u, now)
	}
	if !leader {
		if durable != nil {
			return ActivityResponse{}, &endpoints.Problem{Status: http.StatusServiceUnavailable, Message: "record the activity in the Scaling: " + durable.Error() + "; retry"}
		}
		if st := k.lookup(nn.Namespace, nn.Name); st != nil {
			resp.State = st.currentState()
		}
	}
	if durable != nil {
		log.FromContext(ctx).Info("activity recorded in memory only", "workload", nn.String(), "error", durable.Error())
	}
	return resp, nil
}

// DefaultHistoryLength is how many ticks the explain endpoint keeps per
// workload: five minutes at the default 15 s, enough to see a scale-down
// stabilization window play out.
const DefaultHistoryLength = 20

// ring keeps the last max records, overwriting the oldest. Its buffer
// grows with the records it is given: most workloads (pinned ones, those
// without triggers) never record a tick, and a buffer made whole up front
// cost every one of them max records (about 5.7 KB at the default).
type ring struct {
	buf  []Record
	next int
	max  int
}

func newRing(n int) ring {
	if n <= 0 {
		n = DefaultHistoryLength
	}
	return ring{max: n}
}

func (r *ring) add(rec Record) {
	if len(r.buf) < r.max {
		if len(r.buf) == cap(r.buf) {
			grown := make([]Record, len(r.buf), min(r.max, max(4, 2*cap(r.buf))))
			copy(grown, r.buf)
			r.buf = grown
		}
		r.buf = append(r.buf, rec)
		return
	}
	r.buf[r.next] = rec
	r.next = (r.next + 1) % len(r.buf)
}

// list returns the records oldest first, as a new slice.
func (r *ring) list() []Record {
	out := make([]Record, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}
