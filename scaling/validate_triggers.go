package scaling

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	// Validation must not depend on the zoneinfo of the image the webhook
	// runs in (distroless images have none): embed the IANA database.
	_ "time/tzdata"

	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/promql"
)

var triggerTypes = []string{string(TargetAverageValue), string(TargetValue)}

// promqlParser parses trigger queries with the feature set the embedded
// evaluator accepts (promql/eval.go's parserOptions, repeated here so that
// the decisions do not depend on the metrics pipeline): admission must not
// refuse a query the autoscaler would run. A remote server may lack experimental
// functions; it says so when queried, and the autoscaler keeps the current
// count on errors.
var promqlParser = parser.NewParser(parser.Options{
	EnableExperimentalFunctions:  true,
	ExperimentalDurationExpr:     true,
	EnableExtendedRangeSelectors: true,
	EnableBinopFillModifiers:     true,
})

// promqlSource reports whether a trigger source evaluates Query as PromQL.
// Other sources (cron, user-registered scalers) read their Metadata, and
// their own scaler validates it.
func promqlSource(source string) bool {
	return source == "" || source == "promql" || source == "prometheus"
}

// validateTriggers is V5.
func validateTriggers(ts []Trigger, p lazyPath) field.ErrorList {
	var errs field.ErrorList
	seen := make(map[string]bool, len(ts))
	for i, t := range ts {
		// Built only for an error: most triggers have none.
		tp := func() *field.Path { return p().Index(i) }
		switch {
		case t.Name == "":
			errs = append(errs, field.Required(tp().Child("name"), "every trigger needs a name, used in events and metrics"))
		case seen[t.Name]:
			errs = append(errs, field.Duplicate(tp().Child("name"), t.Name))
		}
		seen[t.Name] = true
		switch t.Type {
		case TargetValue, TargetAverageValue:
		case "":
			errs = append(errs, field.Required(tp().Child("type"), "must be Value or AverageValue"))
		default:
			errs = append(errs, field.NotSupported(tp().Child("type"), t.Type, triggerTypes))
		}
		if promqlSource(t.Source) {
			if strings.TrimSpace(t.Query) == "" {
				errs = append(errs, field.Required(tp().Child("query"),
					`must be a PromQL expression, e.g. sum(rate(http_requests_total{namespace="${namespace}"}[1m]))`))
			} else if err := checkQuery(t.Query); err != nil {
				errs = append(errs, field.Invalid(tp().Child("query"), t.Query, err.Error()))
			}
		}
		if !(t.Threshold > 0) || math.IsInf(t.Threshold, 1) {
			errs = append(errs, field.Invalid(tp().Child("threshold"), t.Threshold,
				"must be a number greater than 0: the value one replica can take (AverageValue) or the target value (Value)"))
		}
		if a := t.ActivationThreshold; a != nil && (!(*a >= 0) || math.IsInf(*a, 1)) {
			errs = append(errs, field.Invalid(tp().Child("activationThreshold"), *a,
				"must be a number greater than or equal to 0"))
		}
	}
	return errs
}

// checkQuery parses q as the autoscaler will evaluate it, or returns the
// answer it gave for q before: parsing allocates a syntax tree, which made
// it the largest cost of validating a config with triggers, while the
// answer depends on q alone and the same few queries come back on every
// edit of a workload.
func checkQuery(q string) error {
	if len(q) > maxCachedQueryLen {
		return parseQuery(q)
	}
	if a, ok := queryResults.get(q); ok {
		return a.err
	}
	err := parseQuery(q)
	queryResults.put(q, queryAnswer{err: err})
	return err
}

// Bounds of the query cache: queries are written by users, so neither the
// number of entries nor their size may grow with what they send. Real
// trigger queries are far shorter than the limit, and a cluster has far
// fewer distinct ones than entries.
const (
	maxCachedQueries  = 1024
	maxCachedQueryLen = 4096
)

var queryResults = queryCache{results: make(map[string]queryAnswer)}

// queryCache remembers checkQuery's answers. When it is full it starts
// over, which keeps it bounded without bookkeeping per entry; queries still
// in use come back at their next review.
type queryCache struct {
	mu      sync.RWMutex
	results map[string]queryAnswer
}

// queryAnswer is what parseQuery said of a query; err is nil for a valid
// one. It is an immutable value, so every review may share it.
type queryAnswer struct{ err error }

func (c *queryCache) get(q string) (queryAnswer, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	a, ok := c.results[q]
	return a, ok
}

func (c *queryCache) put(q string, a queryAnswer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.results) >= maxCachedQueries {
		clear(c.results)
	}
	c.results[q] = a
}

// parseQuery checks q within the default query limits (V10, which also
// parses it, placeholders filled in), then that it yields a number.
func parseQuery(q string) error {
	if err := promql.Limits.Check(promql.Limits{}, q); err != nil {
		var le *promql.LimitError
		if errors.As(err, &le) {
			return err
		}
		var qe *promql.QueryError
		if errors.As(err, &qe) {
			err = qe.Err
		}
		// The parser's message starts with line:column of the first
		// problem.
		return fmt.Errorf("must be valid PromQL: %s", err.Error())
	}
	expr, err := promqlParser.ParseExpr(promql.FillPlaceholders(q))
	if err != nil {
		return fmt.Errorf("must be valid PromQL: %s", err.Error())
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

// validateIdle is V7 for scale-to-zero settings; maxReplicas is the
// effective upper bound (M2 applied).
func validateIdle(idle *Idle, maxReplicas int32, p lazyPath) field.ErrorList {
	if idle == nil {
		return nil
	}
	var errs field.ErrorList
	if r := idle.ReplicasAtStart; r != nil && (*r < 1 || *r > maxReplicas) {
		errs = append(errs, field.Invalid(p().Child("replicasAtStart"), *r, fmt.Sprintf(
			"must be between 1 and maxReplicas (%d): the count a workload wakes to from zero", maxReplicas)))
	}
	if s := idle.TimeoutSeconds; s != nil && *s < 0 {
		errs = append(errs, field.Invalid(p().Child("timeoutSeconds"), *s, "must be greater than or equal to 0"))
	}
	return errs
}

// validateSchedule is V7 for time-of-day rules.
func validateSchedule(s *Schedule, p lazyPath) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	if s.TimeZone != "" {
		if !knownZone(s.TimeZone) {
			errs = append(errs, field.Invalid(p().Child("timeZone"), s.TimeZone,
				"must be an IANA time zone such as Europe/Paris; leave it empty for UTC"))
		}
	}
	for i, t := range s.WakeUp {
		if !validClock(t) {
			errs = append(errs, field.Invalid(p().Child("wakeUp").Index(i), t, clockMessage))
		}
	}
	seen := make(map[string]bool, len(s.ScaleDownTimeout))
	for i, e := range s.ScaleDownTimeout {
		ep := func() *field.Path { return p().Child("scaleDownTimeout").Index(i) }
		switch {
		case !validClock(e.Time):
			errs = append(errs, field.Invalid(ep().Child("time"), e.Time, clockMessage))
		case seen[e.Time]:
			// Two timeouts from the same minute on leave the one in force
			// undefined.
			errs = append(errs, field.Duplicate(ep().Child("time"), e.Time))
		}
		seen[e.Time] = true
		if e.Seconds < 0 {
			errs = append(errs, field.Invalid(ep().Child("seconds"), e.Seconds, "must be greater than or equal to 0"))
		}
	}
	return errs
}

// validZones remembers zone names that loaded, so that validating a
// schedule does not read the zone database on every admission request. Only
// valid names are kept, which bounds it by the IANA database's size whatever
// users send.
var validZones sync.Map // string -> struct{}

// knownZone reports whether name is an IANA zone. "Local" is refused: it is
// the webhook's own zone, which the user cannot know.
func knownZone(name string) bool {
	if name == "Local" {
		return false
	}
	if _, ok := validZones.Load(name); ok {
		return true
	}
	if _, err := time.LoadLocation(name); err != nil {
		return false
	}
	validZones.Store(name, struct{}{})
	return true
}

const clockMessage = "must be a time of day written HH:mm, from 00:00 to 23:59, such as 07:30"

// validClock accepts exactly HH:mm with two digits each; time.Parse would
// also take "7:30".
func validClock(s string) bool {
	if len(s) != 5 || s[2] != ':' {
		return false
	}
	for _, i := range []int{0, 1, 3, 4} {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	h := int(s[0]-'0')*10 + int(s[1]-'0')
	m := int(s[3]-'0')*10 + int(s[4]-'0')
	return h < 24 && m < 60
}
