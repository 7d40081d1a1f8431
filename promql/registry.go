package promql

import (
	"fmt"
	"sort"
	"sync"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Registry is the set of metric names some trigger or debug query asked
// for. The scraper stores only samples whose name is in it, which is what
// keeps the store small: a pod typically exposes hundreds of names and a
// trigger reads one or two. The zero value is empty and ready to use.
//
// Names come from two places: owners (normally one per workload's
// triggers), whose set is replaced with SetOwner so names a trigger no
// longer uses stop being scraped; and one-off requests (Add, AddQuery: the
// debug endpoint), which stay until the process restarts.
type Registry struct {
	mtx    sync.RWMutex
	adhoc  map[string]struct{}
	owners map[string][]string
	// names is the union of adhoc and owners, rebuilt on every change
	// because Has runs once per scraped sample.
	names map[string]struct{}
}

// Add requests names until the process restarts.
func (r *Registry) Add(names ...string) {
	if r.hasAdhoc(names) {
		return
	}
	r.mtx.Lock()
	defer r.mtx.Unlock()
	if r.adhoc == nil {
		r.adhoc = map[string]struct{}{}
	}
	for _, n := range names {
		if n != "" {
			r.adhoc[n] = struct{}{}
		}
	}
	r.rebuild()
}

// hasAdhoc reports whether every name is already requested until the
// process restarts: the evaluator requests the same names on every
// evaluation, and rebuilding the set each time would cost more than the
// query.
func (r *Registry) hasAdhoc(names []string) bool {
	r.mtx.RLock()
	defer r.mtx.RUnlock()
	for _, n := range names {
		if _, ok := r.adhoc[n]; !ok && n != "" {
			return false
		}
	}
	return true
}

// AddQuery parses query and requests the metric names it selects until
// the process restarts. It returns those names.
func (r *Registry) AddQuery(query string) ([]string, error) {
	names, err := MetricNames(query)
	if err != nil {
		return nil, err
	}
	r.Add(names...)
	return names, nil
}

// SetOwner replaces the names requested by owner (e.g. "ns/workload") with
// the names the queries select; no queries removes the owner. On a parse
// error nothing changes.
func (r *Registry) SetOwner(owner string, queries ...string) error {
	var names []string
	for _, q := range queries {
		ns, err := MetricNames(q)
		if err != nil {
			return fmt.Errorf("owner %q: %w", owner, err)
		}
		names = append(names, ns...)
	}
	r.mtx.Lock()
	defer r.mtx.Unlock()
	if r.owners == nil {
		r.owners = map[string][]string{}
	}
	if len(names) == 0 {
		delete(r.owners, owner)
	} else {
		r.owners[owner] = names
	}
	r.rebuild()
	return nil
}

func (r *Registry) rebuild() {
	names := make(map[string]struct{}, len(r.adhoc)+len(r.owners))
	for n := range r.adhoc {
		names[n] = struct{}{}
	}
	for _, ns := range r.owners {
		for _, n := range ns {
			names[n] = struct{}{}
		}
	}
	r.names = names
}

// Has reports whether name was requested.
func (r *Registry) Has(name string) bool {
	r.mtx.RLock()
	_, ok := r.names[name]
	r.mtx.RUnlock()
	return ok
}

// snapshot returns the requested names as of now. The map is never
// changed (rebuild replaces it), so a scrape reads it without the lock,
// once per sample, without copying.
func (r *Registry) snapshot() map[string]struct{} {
	r.mtx.RLock()
	defer r.mtx.RUnlock()
	return r.names
}

// Names returns the requested names, sorted.
func (r *Registry) Names() []string {
	r.mtx.RLock()
	out := make([]string, 0, len(r.names))
	for n := range r.names {
		out = append(out, n)
	}
	r.mtx.RUnlock()
	sort.Strings(out)
	return out
}

// MetricNames returns the metric names a query selects, sorted and without
// duplicates. A selector without an exact name (`{__name__=~"x.*"}`) cannot
// be learnt and is ignored; request such names explicitly with Add.
func MetricNames(query string) ([]string, error) {
	expr, err := parser.NewParser(parserOptions).ParseExpr(query)
	if err != nil {
		return nil, fmt.Errorf("parse query: %w", err)
	}
	return metricNames(expr), nil
}

func metricNames(expr parser.Expr) []string {
	seen := map[string]struct{}{}
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		if vs.Name != "" {
			seen[vs.Name] = struct{}{}
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
				seen[m.Value] = struct{}{}
			}
		}
		return nil
	})
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
