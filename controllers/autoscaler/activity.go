package autoscaler

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// maxActivityBody is the largest body POST /activity/... accepts. It
// reads none, but a gateway hook may send a small one ({}), which is
// ignored; a larger one is refused rather than drained.
const maxActivityBody = 1 << 10

// ActivityResponse is the body of a successful POST /activity/...
type ActivityResponse struct {
	Kind      string    `json:"kind"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Recorded  time.Time `json:"recorded"`
	// State is what the autoscaler does with the workload; activity only
	// matters to an Autoscaling one with idle settings or a range from 0.
	State State `json:"state,omitempty"`
}

// serveActivity answers POST /activity/{namespace}/{resource}/{name}: the
// workload had activity now (a request reached a gateway, a message was
// enqueued). It wakes a workload at zero on its next tick, which is queued
// at once, and restarts its idle timer. A body over maxActivityBody is a
// 413, a namespace or name that no object can have a 400, both before any
// read of the cache.
func (a *Autoscaler) serveActivity(w http.ResponseWriter, r *http.Request) {
	if _, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxActivityBody)); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeProblem(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the activity signal takes no body; send at most %d bytes", maxActivityBody))
			return
		}
		writeProblem(w, http.StatusBadRequest, "read the request body: "+err.Error())
		return
	}
	if !validObjectPath(w, r) {
		return
	}
	k, ok := a.kindFor(w, r.PathValue("resource"))
	if !ok {
		return
	}
	e := a.env.Load()
	if e == nil {
		writeProblem(w, http.StatusServiceUnavailable, "the autoscaler is starting; retry shortly")
		return
	}
	nn := types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	u := k.newObject()
	if err := e.cache.Get(r.Context(), nn, u); err != nil {
		if apierrors.IsNotFound(err) {
			writeProblem(w, http.StatusNotFound, k.resource+" "+nn.String()+" not found: check the namespace and name")
			return
		}
		writeProblem(w, http.StatusServiceUnavailable, "read "+k.resource+" "+nn.String()+": "+err.Error())
		return
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
		durable = e.activity.Record(r.Context(), k.scalingKey(nn), u, now)
	}
	if !leader {
		if durable != nil {
			writeProblem(w, http.StatusServiceUnavailable, "record the activity in the Scaling: "+durable.Error()+"; retry")
			return
		}
		if st := k.lookup(nn.Namespace, nn.Name); st != nil {
			resp.State = st.currentState()
		}
	}
	if durable != nil {
		log.FromContext(r.Context()).Info("activity recorded in memory only", "workload", nn.String(), "error", durable.Error())
	}
	writeJSON(w, http.StatusAccepted, resp)
}

// validObjectPath answers 400 unless the path's namespace is a namespace
// name and its name an object name (a DNS-1123 subdomain, which every
// profiled custom resource's name is), so that no lookup is made for what
// cannot exist.
func validObjectPath(w http.ResponseWriter, r *http.Request) bool {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	var problems []string
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		problems = append(problems, fmt.Sprintf("namespace %q is not a namespace name: %s", ns, strings.Join(errs, "; ")))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		problems = append(problems, fmt.Sprintf("name %q is not an object name: %s", name, strings.Join(errs, "; ")))
	}
	if len(problems) > 0 {
		writeProblem(w, http.StatusBadRequest, strings.Join(problems, "; "))
		return false
	}
	return true
}
