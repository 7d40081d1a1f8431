package promql

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

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
// debug endpoint and queries evaluated without an owner), which stay until
// Expire drops those not requested since (the store does so with its
// retention). So the set is what the live triggers and recent queries
// read, and it shrinks back when triggers change or go away.
type Registry struct {
	mtx sync.RWMutex
	// adhoc holds one-off names and when they were last requested (Unix
	// nanoseconds).
	adhoc  map[string]*atomic.Int64
	owners map[string][]string
	// ownedRefs counts, for every name an owner requests, how many owners
	// request it.
	ownedRefs map[string]int
	// now is the clock of one-off requests; nil means time.Now.
	now func() time.Time
	// names is the union of adhoc and owners, rebuilt on every change
	// because Has runs once per scraped sample.
	names map[string]struct{}
}

func (r *Registry) clock() int64 {
	if r.now == nil {
		return time.Now().UnixNano()
	}
	return r.now().UnixNano()
}

// Add requests names until Expire drops them, not requested since.
func (r *Registry) Add(names ...string) { r.add(names, false) }

// addUnowned requests the names no owner holds, as Add does: a trigger's
// query evaluated under its owner adds nothing one-off, so the names leave
// with the owner.
func (r *Registry) addUnowned(names ...string) { r.add(names, true) }

func (r *Registry) add(names []string, skipOwned bool) {
	now := r.clock()
	if r.touch(names, now, skipOwned) {
		return
	}
	r.mtx.Lock()
	defer r.mtx.Unlock()
	if r.adhoc == nil {
		r.adhoc = map[string]*atomic.Int64{}
	}
	changed := false
	for _, n := range names {
		if n == "" {
			continue
		}
		if skipOwned && r.ownedLocked(n) {
			continue
		}
		if at := r.adhoc[n]; at != nil {
			at.Store(now)
			continue
		}
		at := new(atomic.Int64)
		at.Store(now)
		r.adhoc[n] = at
		changed = true
	}
	if changed {
		r.rebuild()
	}
}

// ownedLocked reports whether a name is requested, and not only one-off.
func (r *Registry) ownedLocked(n string) bool {
	if _, ok := r.names[n]; !ok {
		return false
	}
	_, adhoc := r.adhoc[n]
	if !adhoc {
		return true
	}
	return r.ownedRefs[n] > 0
}

// touch marks every one-off name of names requested at now, under the read
// lock, and reports whether none is missing (skipOwned: none missing from
// the owners' names either): the evaluator requests the same names on
// every evaluation, and rebuilding the set each time would cost more than
// the query.
func (r *Registry) touch(names []string, now int64, skipOwned bool) bool {
	r.mtx.RLock()
	defer r.mtx.RUnlock()
	for _, n := range names {
		if n == "" {
			continue
		}
		if at := r.adhoc[n]; at != nil {
			at.Store(now)
			continue
		}
		if _, ok := r.names[n]; ok && skipOwned {
			continue
		}
		return false
	}
	return true
}

// Expire drops the one-off names not requested since before, and returns
// how many it dropped.
func (r *Registry) Expire(before time.Time) int {
	cut := before.UnixNano()
	r.mtx.Lock()
	defer r.mtx.Unlock()
	n := 0
	for name, at := range r.adhoc {
		if at.Load() < cut {
			delete(r.adhoc, name)
			n++
		}
	}
	if n > 0 {
		r.rebuild()
	}
	return n
}

// Len is how many names are requested.
func (r *Registry) Len() int {
	r.mtx.RLock()
	defer r.mtx.RUnlock()
	return len(r.names)
}

// AddQuery parses query and requests the metric names it selects as Add
// does. It returns those names.
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
	old := r.owners[owner]
	if len(names) == 0 {
		delete(r.owners, owner)
	} else {
		r.owners[owner] = names
	}
	// Every workload's triggers are set once at least, and most read the
	// same few names: rebuilding the set each time would make setting
	// n owners cost n² (minutes at 100,000 workloads). The counts say
	// whether the set itself changes.
	if r.ownedRefs == nil {
		r.ownedRefs = map[string]int{}
	}
	changed := false
	for _, n := range names {
		r.ownedRefs[n]++
		if r.ownedRefs[n] == 1 {
			changed = true
		}
	}
	for _, n := range old {
		r.ownedRefs[n]--
		if r.ownedRefs[n] == 0 {
			delete(r.ownedRefs, n)
			changed = true
		}
	}
	if changed {
		r.rebuild()
	}
	return nil
}

func (r *Registry) rebuild() {
	names := make(map[string]struct{}, len(r.adhoc)+len(r.ownedRefs))
	for n := range r.adhoc {
		names[n] = struct{}{}
	}
	for n := range r.ownedRefs {
		names[n] = struct{}{}
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
