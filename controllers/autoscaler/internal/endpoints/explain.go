package endpoints

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/status"
	"github.com/scaleplane/scaleplane/scaling"
)

// Record is one tick as the explain endpoint shows it: the decision with
// every input it used (scaling.Decision carries them), and what became of
// it.
type Record struct {
	scaling.Decision
	// Written is true when Desired differed from Current and the /scale
	// write succeeded.
	Written bool `json:"written"`
	// Error is the failed write's error, when there was one.
	Error string `json:"error,omitempty"`
	// LastActivity is the latest activity signal the tick was given.
	LastActivity time.Time `json:"lastActivity,omitzero"`
}

// Explanation is the body of GET /debug/autoscaler/{namespace}/{resource}/{name}.
type Explanation struct {
	// Group and Kind name the workload's kind (two groups may each have
	// a kind of one name).
	Group     string `json:"group"`
	Kind      string `json:"kind"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// State is what the autoscaler does with the workload now, and Message
	// why (for every state but Autoscaling).
	State   status.State `json:"state"`
	Message string       `json:"message,omitempty"`
	// PollingIntervalSeconds is the workload's tick period.
	PollingIntervalSeconds float64 `json:"pollingIntervalSeconds"`
	// LastActivity is the latest activity signal received.
	LastActivity time.Time `json:"lastActivity,omitzero"`
	// Decisions are the last ticks, oldest first.
	Decisions []Record `json:"decisions"`
}

// serveExplain answers GET /debug/autoscaler/{namespace}/{resource}/{name}.
func (h handler) serveExplain(w http.ResponseWriter, r *http.Request) {
	if !validObjectPath(w, r) {
		return
	}
	nn := types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	e, err := h.loop.Explain(r.PathValue("resource"), nn)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

// errorBody is every endpoint's error.
type errorBody struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeProblem(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Error: msg})
}

// writeError answers a Problem with its status, any other error with 500.
func writeError(w http.ResponseWriter, err error) {
	var p *Problem
	if errors.As(err, &p) {
		writeProblem(w, p.Status, p.Message)
		return
	}
	writeProblem(w, http.StatusInternalServerError, err.Error())
}
