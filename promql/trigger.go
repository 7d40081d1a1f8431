package promql

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/prometheus/promql/parser"
)

// TriggerPlaceholders are the placeholders a trigger query may use. The
// autoscaler fills exactly these (TriggerVars), and admission refuses any
// other (TriggerChecker), so a typo such as ${namspace} is refused when it
// is written instead of failing on every tick.
var TriggerPlaceholders = []string{"namespace", "name", "kind", "resource"}

// TriggerVars are the placeholder values of one workload's trigger
// queries: its namespace and name, its kind and its plural resource.
func TriggerVars(namespace, name, kind, resource string) map[string]string {
	return map[string]string{"namespace": namespace, "name": name, "kind": kind, "resource": resource}
}

// sampleVars stand for TriggerVars when a query is checked before any
// workload is known: a value safe everywhere a placeholder may stand.
var sampleVars = func() map[string]string {
	vars := make(map[string]string, len(TriggerPlaceholders))
	for _, p := range TriggerPlaceholders {
		vars[p] = "x"
	}
	return vars
}()

// TriggerChecker is admission's check of a trigger query (V5, V10, V11):
// its placeholders are TriggerPlaceholders, it is within the Limits, it
// parses, and it yields one number (a scalar or an instant vector). It
// remembers its answers, because parsing allocates a syntax tree and the
// same few queries come back on every edit of a workload. Build one per
// component (it is not process-wide) and share it between goroutines.
type TriggerChecker struct {
	limits Limits
	cache  checkCache
}

// NewTriggerChecker returns a checker for l (defaults applied).
func NewTriggerChecker(l Limits) *TriggerChecker {
	return &TriggerChecker{limits: l.WithDefaults()}
}

// Limits returns the limits the checker applies.
func (c *TriggerChecker) Limits() Limits { return c.limits }

// Check returns nil for a query a trigger may use, or an error whose
// message says what to change, for an admission response: a *LimitError
// for a bound, or a plain error for an unknown placeholder, a query that
// does not parse or one that does not yield a number.
func (c *TriggerChecker) Check(query string) error {
	return c.cache.answer(query, c.check)
}

func (c *TriggerChecker) check(query string) error {
	if len(query) > c.limits.MaxQueryLength {
		return c.limits.Check(query)
	}
	if _, err := Expand(query, sampleVars); err != nil {
		var qe *QueryError
		if errors.As(err, &qe) {
			return qe.Err
		}
		return err
	}
	expr, err := c.limits.check(query)
	var qe *QueryError
	switch {
	case errors.As(err, &qe):
		// The parser's message starts with line:column of the first
		// problem, in the query as written.
		return fmt.Errorf("must be valid PromQL: %w", qe.Err)
	case err != nil:
		return err
	}
	switch expr.Type() {
	case parser.ValueTypeScalar, parser.ValueTypeVector:
		return nil
	case parser.ValueTypeMatrix:
		return errors.New("must yield an instant vector or a scalar, not a range vector; wrap it in a function such as rate(...) or avg_over_time(...)")
	default:
		return fmt.Errorf("must yield an instant vector or a scalar, not a %s; compute a number, e.g. sum(rate(requests_total[1m]))", expr.Type())
	}
}

// Bounds of a checkCache: queries are written by users, so neither the
// number of answers nor their size may grow with what they send. A cluster
// has far fewer distinct trigger queries than entries.
const maxCheckAnswers = 1024

// checkCache remembers the answers of a check by query. When it is full it
// starts over, which keeps it bounded without bookkeeping per entry;
// queries still in use come back at their next check. Queries longer than
// maxCachedQueryLen are checked every time (their check is bounded by the
// limits, and they are rare).
type checkCache struct {
	mu      sync.RWMutex
	answers map[string]error
}

func (c *checkCache) answer(q string, check func(string) error) error {
	if len(q) > maxCachedQueryLen {
		return check(q)
	}
	c.mu.RLock()
	err, ok := c.answers[q]
	c.mu.RUnlock()
	if ok {
		return err
	}
	err = check(q)
	c.mu.Lock()
	if c.answers == nil || len(c.answers) >= maxCheckAnswers {
		c.answers = make(map[string]error)
	}
	c.answers[q] = err
	c.mu.Unlock()
	return err
}
