package autoscaler

import (
	"encoding/json"
	"net/http"
	"time"

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
	State   State  `json:"state"`
	Message string `json:"message,omitempty"`
	// PollingIntervalSeconds is the workload's tick period.
	PollingIntervalSeconds float64 `json:"pollingIntervalSeconds"`
	// LastActivity is the latest activity signal received.
	LastActivity time.Time `json:"lastActivity,omitzero"`
	// Decisions are the last ticks, oldest first.
	Decisions []Record `json:"decisions"`
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

// serveExplain answers GET /debug/autoscaler/{namespace}/{resource}/{name}.
func (a *Autoscaler) serveExplain(w http.ResponseWriter, r *http.Request) {
	if !validObjectPath(w, r) {
		return
	}
	k, ok := a.kindFor(w, r.PathValue("resource"))
	if !ok {
		return
	}
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	st := k.lookup(ns, name)
	if st == nil {
		writeProblem(w, http.StatusNotFound, "the autoscaler has not seen "+k.resource+" "+ns+"/"+name+
			": check the name, or wait for its first reconcile")
		return
	}
	writeJSON(w, http.StatusOK, st.explain(k))
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
