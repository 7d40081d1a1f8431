package autoscaler

import (
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

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
// at once, and restarts its idle timer.
func (a *Autoscaler) serveActivity(w http.ResponseWriter, r *http.Request) {
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
	st := k.get(nn)
	st.recordActivity(now)
	k.enqueue(st)
	writeJSON(w, http.StatusAccepted, ActivityResponse{Kind: k.kind, Namespace: nn.Namespace, Name: nn.Name, Recorded: now.UTC(), State: st.currentState()})
}
