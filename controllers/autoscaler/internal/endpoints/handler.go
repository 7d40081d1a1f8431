package endpoints

import (
	"context"
	"net/http"

	"k8s.io/apimachinery/pkg/types"
)

// Paths of the endpoints (prefixes, with a trailing slash, as the metrics
// server's mux wants them).
const (
	ActivityPath = "/activity/"
	ExplainPath  = "/debug/autoscaler/"
)

// Loop is what the endpoints ask of the autoscaler's loops, and all they
// ask. resource names a profiled kind as a URL does (plural, plural.group
// or lower-case kind); nn has been checked to be a namespace and an object
// name. An error that is a *Problem is answered with its status.
type Loop interface {
	// Explain is what the loop knows of the workload and its last ticks.
	Explain(resource string, nn types.NamespacedName) (Explanation, error)
	// RecordActivity records activity of the workload now: in the
	// loop's memory on the leader (which queues a tick), and in its
	// Scaling on every replica.
	RecordActivity(ctx context.Context, resource string, nn types.NamespacedName) (ActivityResponse, error)
}

// Problem is an answer other than success: an HTTP status and what to
// change.
type Problem struct {
	Status  int
	Message string
}

func (p *Problem) Error() string { return p.Message }

// Handler serves the activity signal and the explain view of loop. Mount
// it on the metrics server at ActivityPath and ExplainPath, where the
// server's authentication and authorization filter wraps it.
func Handler(loop Loop) http.Handler {
	h := handler{loop: loop}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+ActivityPath+"{namespace}/{resource}/{name}", h.serveActivity)
	mux.HandleFunc("GET "+ExplainPath+"{namespace}/{resource}/{name}", h.serveExplain)
	return mux
}

type handler struct{ loop Loop }
