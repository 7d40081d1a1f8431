package endpoints

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/status"
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
	State status.State `json:"state,omitempty"`
}

// serveActivity answers POST /activity/{namespace}/{resource}/{name}: the
// workload had activity now (a request reached a gateway, a message was
// enqueued), which the loop records (Loop.RecordActivity). A body over
// maxActivityBody is a 413, a namespace or name that no object can have a
// 400, both before the loop is asked.
func (h handler) serveActivity(w http.ResponseWriter, r *http.Request) {
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
	nn := types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	resp, err := h.loop.RecordActivity(r.Context(), r.PathValue("resource"), nn)
	if err != nil {
		writeError(w, err)
		return
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
