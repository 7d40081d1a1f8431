package autoscaler

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakePrometheus answers /api/v1/query as a Prometheus server would, with
// one number per namespace the query selects (namespace="..."), so that
// parallel tests do not see each other's values. It remembers the queries
// it was asked.
type fakePrometheus struct {
	srv *httptest.Server

	mu      sync.Mutex
	values  map[string]float64
	queries []string
}

var namespaceMatcher = regexp.MustCompile(`namespace="([^"]+)"`)

func newFakePrometheus(t *testing.T) *fakePrometheus {
	t.Helper()
	p := &fakePrometheus{values: map[string]float64{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *fakePrometheus) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/query" {
		http.NotFound(w, r)
		return
	}
	q := r.FormValue("query")
	p.mu.Lock()
	p.queries = append(p.queries, q)
	m := namespaceMatcher.FindStringSubmatch(q)
	v, ok := 0.0, false
	if m != nil {
		v, ok = p.values[m[1]]
	}
	p.mu.Unlock()
	result := []any{}
	if ok {
		result = append(result, map[string]any{"metric": map[string]string{}, "value": []any{float64(time.Now().Unix()), strconv.FormatFloat(v, 'g', -1, 64)}})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": result}})
}

func (p *fakePrometheus) set(ns string, v float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.values[ns] = v
}

// asked reports whether some query contained the namespace's selector.
func (p *fakePrometheus) asked(ns string) (bool, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	want := fmt.Sprintf(`namespace=%q`, ns)
	for _, q := range p.queries {
		if strings.Contains(q, want) {
			return true, q
		}
	}
	return false, fmt.Sprintf("%d queries, none for %s", len(p.queries), ns)
}
