package scaling

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Scalers turn a trigger into numbers, KEDA's shape in Go: a scaler
// describes its metric, returns samples with an activity flag, and closes.
// Constructors are registered by trigger source, so a library user adds a
// trigger type with RegisterScaler instead of editing scaleplane. Decisions
// never call scalers: the controller samples every trigger, then hands the
// samples to Decide as TriggerResults.

// Trigger sources scaleplane knows. "promql" and "prometheus" are registered
// by the process that owns a metrics store or a server client (see
// QueryScaler); "cron" is built in.
const (
	SourcePromQL     = "promql"
	SourcePrometheus = "prometheus"
	SourceCron       = "cron"
)

// ScalerMetric describes what a scaler measures (KEDA's
// GetMetricSpecForScaling).
type ScalerMetric struct {
	// Name is the trigger's name.
	Name string `json:"name"`
	// Type says how Value compares with Threshold.
	Type      TargetType `json:"type"`
	Threshold float64    `json:"threshold"`
	// ActivationThreshold is the value above which a workload at zero
	// wakes; 0 when the trigger sets none.
	ActivationThreshold float64 `json:"activationThreshold"`
}

// Sample is one reading of a trigger.
type Sample struct {
	Value float64 `json:"value"`
	// OK is false when the source had no data. No data is never zero:
	// Decide keeps the current count instead of scaling down.
	OK bool `json:"ok"`
	// Active is the scaler's own verdict that there is work regardless of
	// the value (KEDA's IsActive), such as a cron window being open. Value
	// based scalers leave it false and let the trigger's
	// activationThreshold decide.
	Active bool `json:"active,omitempty"`
}

// Scaler produces the samples of one trigger of one workload.
type Scaler interface {
	// Metric describes the metric and its target.
	Metric() ScalerMetric
	// Sample reads the trigger's value at now. An error and a Sample with
	// OK false both make the trigger invalid for this tick.
	Sample(ctx context.Context, now time.Time) (Sample, error)
	// Close releases what the scaler holds (connections, caches).
	Close(ctx context.Context) error
}

// ScalerConfig is what a constructor receives.
type ScalerConfig struct {
	Trigger Trigger
	// Namespace and Name identify the workload.
	Namespace, Name string
	// Vars are extra placeholder values for queries (${key}); namespace
	// and name are always available.
	Vars map[string]string
}

// ScalerConstructor builds the scaler of one trigger. It validates the
// trigger's metadata and reports what to change when it is wrong.
type ScalerConstructor func(ctx context.Context, cfg ScalerConfig) (Scaler, error)

var scalerRegistry = struct {
	sync.RWMutex
	ctors map[string]ScalerConstructor
}{ctors: map[string]ScalerConstructor{SourceCron: newCronScaler}}

// RegisterScaler makes a trigger source available to NewScaler. Registering
// a source again replaces its constructor, so a program can swap a built-in
// scaler. It panics on an empty source or a nil constructor: both are
// programming errors.
func RegisterScaler(source string, ctor ScalerConstructor) {
	if source == "" || ctor == nil {
		panic("scaling: RegisterScaler needs a source name and a constructor")
	}
	scalerRegistry.Lock()
	defer scalerRegistry.Unlock()
	scalerRegistry.ctors[source] = ctor
}

// ScalerSources lists the registered trigger sources, sorted.
func ScalerSources() []string {
	scalerRegistry.RLock()
	defer scalerRegistry.RUnlock()
	out := make([]string, 0, len(scalerRegistry.ctors))
	for s := range scalerRegistry.ctors {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// ErrUnknownSource is returned by NewScaler for a source nobody registered.
var ErrUnknownSource = errors.New("unknown trigger source")

// NewScaler builds the scaler for cfg.Trigger from the constructor
// registered for its source ("promql" when empty).
func NewScaler(ctx context.Context, cfg ScalerConfig) (Scaler, error) {
	source := cfg.Trigger.Source
	if source == "" {
		source = SourcePromQL
	}
	scalerRegistry.RLock()
	ctor, ok := scalerRegistry.ctors[source]
	scalerRegistry.RUnlock()
	if !ok {
		return nil, fmt.Errorf("trigger %q: %w %q (registered: %s)", cfg.Trigger.Name, ErrUnknownSource, source, strings.Join(ScalerSources(), ", "))
	}
	s, err := ctor(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("trigger %q (source %s): %w", cfg.Trigger.Name, source, err)
	}
	return s, nil
}

// MetricSource evaluates a query at a time: the embedded PromQL store, or a
// remote Prometheus-compatible server. ok is false when the query returned
// no data (an empty vector), which is not the same as 0.
type MetricSource interface {
	Eval(ctx context.Context, query string, at time.Time, vars map[string]string) (value float64, ok bool, err error)
}

// QueryScaler returns a constructor for triggers whose Query is evaluated by
// src. The query's ${namespace}, ${name} and ${key} placeholders (key from
// ScalerConfig.Vars) are expanded once, at construction; src receives the
// expanded query and the variables. Register it for "promql" with the
// embedded store, and for "prometheus" with a remote client:
//
//	scaling.RegisterScaler(scaling.SourcePromQL, scaling.QueryScaler(store))
func QueryScaler(src MetricSource) ScalerConstructor {
	return func(_ context.Context, cfg ScalerConfig) (Scaler, error) {
		if strings.TrimSpace(cfg.Trigger.Query) == "" {
			return nil, errors.New("query is empty: set the trigger's query")
		}
		vars := make(map[string]string, len(cfg.Vars)+2)
		for k, v := range cfg.Vars {
			vars[k] = v
		}
		vars["namespace"], vars["name"] = cfg.Namespace, cfg.Name
		return &queryScaler{src: src, metric: triggerMetric(cfg.Trigger), query: ExpandPlaceholders(cfg.Trigger.Query, vars), vars: vars}, nil
	}
}

// ExpandPlaceholders replaces every ${key} in s by vars[key]; unknown keys
// are left as written so that the query fails visibly.
func ExpandPlaceholders(s string, vars map[string]string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			break
		}
		b.WriteString(s[:i])
		if v, ok := vars[s[i+2:i+j]]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(s[i : i+j+1])
		}
		s = s[i+j+1:]
	}
	b.WriteString(s)
	return b.String()
}

func triggerMetric(t Trigger) ScalerMetric {
	m := ScalerMetric{Name: t.Name, Type: t.Type, Threshold: t.Threshold}
	if t.ActivationThreshold != nil {
		m.ActivationThreshold = *t.ActivationThreshold
	}
	return m
}

type queryScaler struct {
	src    MetricSource
	metric ScalerMetric
	query  string
	vars   map[string]string
}

func (s *queryScaler) Metric() ScalerMetric { return s.metric }

func (s *queryScaler) Sample(ctx context.Context, now time.Time) (Sample, error) {
	v, ok, err := s.src.Eval(ctx, s.query, now, s.vars)
	if err != nil {
		return Sample{}, fmt.Errorf("evaluate %q: %w", s.query, err)
	}
	return Sample{Value: v, OK: ok}, nil
}

func (s *queryScaler) Close(context.Context) error { return nil }

// The cron scaler asks for a fixed count during a daily time window.
// Metadata:
//
//	start            "HH:mm", required: the window opens (inclusive)
//	end              "HH:mm", required: the window closes (exclusive); an end
//	                 before start makes the window cross midnight
//	timezone         IANA name, default UTC; times are wall-clock times there
//	days             optional days the window opens on: "Mon-Fri",
//	                 "Sat,Sun", "Mon,Wed-Fri" (Sun Mon Tue Wed Thu Fri Sat);
//	                 default every day
//	desiredReplicas  integer >= 0, default 1
//
// Inside the window the trigger is active and asks for desiredReplicas;
// outside it is inactive and asks for 0, so other triggers (and the idle
// timeout) decide. The trigger's type must be AverageValue; any threshold
// works, since the reported value is desiredReplicas * threshold.
type cronScaler struct {
	metric     ScalerMetric
	loc        *time.Location
	start, end int
	days       [7]bool
	replicas   int64
}

func newCronScaler(_ context.Context, cfg ScalerConfig) (Scaler, error) {
	t := cfg.Trigger
	if t.Type != TargetAverageValue {
		return nil, fmt.Errorf("type %q: a cron trigger needs type %s", t.Type, TargetAverageValue)
	}
	md := t.Metadata
	s := &cronScaler{metric: triggerMetric(t), replicas: 1}
	var errs []error
	var ok bool
	if s.start, ok = clockMinutes(md["start"]); !ok {
		errs = append(errs, fmt.Errorf("metadata.start %q: want HH:mm", md["start"]))
	}
	if s.end, ok = clockMinutes(md["end"]); !ok {
		errs = append(errs, fmt.Errorf("metadata.end %q: want HH:mm", md["end"]))
	} else if s.end == s.start {
		errs = append(errs, fmt.Errorf("metadata.end %q equals start: the window would be empty", md["end"]))
	}
	loc, err := time.LoadLocation(md["timezone"])
	if err != nil {
		errs = append(errs, fmt.Errorf("metadata.timezone %q: %w", md["timezone"], err))
	}
	s.loc = loc
	if s.days, err = parseWeekdays(md["days"]); err != nil {
		errs = append(errs, fmt.Errorf("metadata.days: %w", err))
	}
	if v, set := md["desiredReplicas"]; set {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("metadata.desiredReplicas %q: want an integer >= 0", v))
		}
		s.replicas = n
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *cronScaler) Metric() ScalerMetric { return s.metric }

func (s *cronScaler) Sample(_ context.Context, now time.Time) (Sample, error) {
	if !s.open(now) {
		return Sample{OK: true}, nil
	}
	return Sample{Value: float64(s.replicas) * s.metric.Threshold, OK: true, Active: true}, nil
}

// open reports whether now is inside a window. A window crossing midnight
// belongs to the day it opens on.
func (s *cronScaler) open(now time.Time) bool {
	local := now.In(s.loc)
	m := local.Hour()*60 + local.Minute()
	day := local.Weekday()
	if s.start < s.end {
		return s.days[day] && m >= s.start && m < s.end
	}
	yesterday := (day + 6) % 7
	return (s.days[day] && m >= s.start) || (s.days[yesterday] && m < s.end)
}

func (s *cronScaler) Close(context.Context) error { return nil }

var weekdayNames = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

// parseWeekdays parses "Mon-Fri", "Sat,Sun", "Fri-Mon" (ranges wrap); empty
// means every day.
func parseWeekdays(s string) ([7]bool, error) {
	var days [7]bool
	if strings.TrimSpace(s) == "" {
		for i := range days {
			days[i] = true
		}
		return days, nil
	}
	for _, part := range strings.Split(s, ",") {
		from, to, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, ok := weekdayNames[strings.ToLower(strings.TrimSpace(from))]
		if !ok {
			return days, fmt.Errorf("%q is not a day (Sun Mon Tue Wed Thu Fri Sat)", from)
		}
		b := a
		if isRange {
			if b, ok = weekdayNames[strings.ToLower(strings.TrimSpace(to))]; !ok {
				return days, fmt.Errorf("%q is not a day (Sun Mon Tue Wed Thu Fri Sat)", to)
			}
		}
		for d := a; ; d = (d + 1) % 7 {
			days[d] = true
			if d == b {
				break
			}
		}
	}
	return days, nil
}

// sampleProblem says why a sample cannot be used, "" when it can.
func sampleProblem(s Sample) string {
	switch {
	case !s.OK:
		return "no data"
	case math.IsNaN(s.Value):
		return "value is NaN"
	case math.IsInf(s.Value, 0):
		return fmt.Sprintf("value is %v", s.Value)
	}
	return ""
}
