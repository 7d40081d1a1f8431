package scaling

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Scalers turn a trigger into numbers, KEDA's shape in Go: a scaler
// describes its metric, returns samples with an activity flag, and closes.
// Trigger sources (a constructor, the trigger types it supports and its
// admission checks) are registered in a Sources value that belongs to the
// component that owns them and is handed to both the webhook and the
// autoscaler, so a library user adds a trigger source without editing
// scaleplane, and two managers in one process never share one. Decisions
// never call scalers: the controller samples every trigger, then hands the
// samples to Decide as TriggerResults.

// Trigger sources scaleplane knows. "promql" and "prometheus" are built by
// the component that owns a metrics store or a server client (see
// QueryScaler); "cron" is CronSource.
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

// DirectSampler is a Scaler that can take some of its samples at once,
// from memory, without waiting on anything (no I/O, no lock held by a
// slow party). The autoscaler takes such a sample inline rather than on a
// goroutine bounded by a timeout, which costs more than the sample; when
// it is not DirectAnswered it calls Sample as for any scaler, with
// DirectDeclinedContext(ctx) when it is DirectDeclined.
type DirectSampler interface {
	SampleDirect(ctx context.Context, now time.Time) (s Sample, how Direct)
}

// Direct is how a direct sample (DirectSampler, DirectMetricSource) went.
type Direct int

const (
	// DirectNotTaken: nothing was read; Sample (Eval) takes the sample
	// the usual way, at once from memory when it can.
	DirectNotTaken Direct = iota
	// DirectAnswered: the sample is taken.
	DirectAnswered
	// DirectDeclined: data was read and then the sample left to the slow
	// path (too many samples, over a timeout, a kind of data the direct
	// path does not read). Sample (Eval) under DirectDeclinedContext goes
	// to the slow path straight, rather than read the same data again
	// only to decline again.
	DirectDeclined
)

type directDeclinedKey struct{}

// DirectDeclinedContext is ctx for the Sample (or Eval) that follows a
// direct attempt which answered DirectDeclined.
func DirectDeclinedContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, directDeclinedKey{}, true)
}

// IsDirectDeclined reports whether ctx is a DirectDeclinedContext: the
// direct path already declined this sample.
func IsDirectDeclined(ctx context.Context) bool {
	d, _ := ctx.Value(directDeclinedKey{}).(bool)
	return d
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

// Source is one trigger source: what builds its scalers, which trigger
// types they accept, and what admission checks of a trigger naming it.
type Source struct {
	// Types are the trigger types the source's scalers accept; empty means
	// both Value and AverageValue.
	Types []TargetType
	// Validate checks what only this source knows (its query, its
	// metadata) for admission (V5, V10, V11), reporting under path, the
	// trigger's path. Nil checks nothing. It must be pure and cheap: it
	// runs on every admission request of a workload with triggers.
	Validate func(t Trigger, path *field.Path) field.ErrorList
	// New builds the scaler of one trigger.
	New ScalerConstructor
}

// supports reports whether the source's scalers accept type t.
func (s Source) supports(t TargetType) bool {
	return len(s.Types) == 0 || slices.Contains(s.Types, t)
}

// Sources is a registry of trigger sources by name, with the name a
// trigger without a source uses. Build one per component with NewSources,
// register the sources before the webhook and the autoscaler use it, and
// give the same value to both, so admission accepts exactly the triggers
// the autoscaler can build. It is safe for concurrent use.
type Sources struct {
	mu      sync.RWMutex
	sources map[string]Source
	def     string
}

// NewSources returns an empty registry whose default source is "promql".
func NewSources() *Sources {
	return &Sources{sources: map[string]Source{}, def: SourcePromQL}
}

// Register makes a trigger source available under name. Registering a
// name again replaces its source, so a program can swap a built-in one.
func (s *Sources) Register(name string, src Source) error {
	if name == "" {
		return errors.New("register trigger source: the name is empty")
	}
	if src.New == nil {
		return fmt.Errorf("register trigger source %q: the constructor is nil", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sources[name] = src
	return nil
}

// SetDefault names the source of triggers that name none.
func (s *Sources) SetDefault(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.def = name
}

// Default is the name of the source of triggers that name none; "" for a
// nil registry.
func (s *Sources) Default() string {
	if s == nil {
		return ""
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.def
}

// Lookup returns the source called name, or the default source for "".
func (s *Sources) Lookup(name string) (Source, bool) {
	if s == nil {
		return Source{}, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if name == "" {
		name = s.def
	}
	src, ok := s.sources[name]
	return src, ok
}

// Names lists the registered sources, sorted; nil for a nil registry.
func (s *Sources) Names() []string {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.sources))
}

// empty reports whether no source is registered (or s is nil).
func (s *Sources) empty() bool {
	if s == nil {
		return true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.sources) == 0
}

// ErrUnknownSource is returned by NewScaler for a source nobody registered.
var ErrUnknownSource = errors.New("unknown trigger source")

// NewScaler builds the scaler for cfg.Trigger with the constructor of its
// source (the default source when it names none).
func (s *Sources) NewScaler(ctx context.Context, cfg ScalerConfig) (Scaler, error) {
	name := cfg.Trigger.Source
	if name == "" {
		name = s.Default()
	}
	src, ok := s.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("trigger %q: %w %q (registered: %s)", cfg.Trigger.Name, ErrUnknownSource, name, strings.Join(s.Names(), ", "))
	}
	sc, err := src.New(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("trigger %q (source %s): %w", cfg.Trigger.Name, name, err)
	}
	return sc, nil
}

// MetricSource evaluates a query at a time: the embedded PromQL store, or a
// remote Prometheus-compatible server. ok is false when the query returned
// no data (an empty vector), which is not the same as 0.
type MetricSource interface {
	Eval(ctx context.Context, query string, at time.Time, vars map[string]string) (value float64, ok bool, err error)
}

// DirectMetricSource is a MetricSource that answers some queries at once,
// from memory (the embedded store's direct path); unless how is
// DirectAnswered the query must go through Eval, under
// DirectDeclinedContext when how is DirectDeclined (Eval must then not
// try the direct path again).
type DirectMetricSource interface {
	MetricSource
	EvalDirect(ctx context.Context, query string, at time.Time, vars map[string]string) (value float64, ok bool, how Direct)
}

// QueryScaler returns a constructor for triggers whose Query is evaluated by
// src. src receives the query as written and the placeholder values: the
// trigger's ScalerConfig.Vars, with ${namespace} and ${name} always set to
// the workload's. Replacing them is src's business, because only it knows
// how to escape a value for its query language. Build the "promql" source
// with it over the embedded store, and "prometheus" over a remote client.
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
		return &queryScaler{src: src, metric: triggerMetric(cfg.Trigger), query: cfg.Trigger.Query, vars: vars}, nil
	}
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

// SampleDirect implements DirectSampler when the source answers the query
// from memory.
func (s *queryScaler) SampleDirect(ctx context.Context, now time.Time) (Sample, Direct) {
	d, ok := s.src.(DirectMetricSource)
	if !ok {
		return Sample{}, DirectNotTaken
	}
	v, ok, how := d.EvalDirect(ctx, s.query, now, s.vars)
	if how != DirectAnswered {
		return Sample{}, how
	}
	return Sample{Value: v, OK: ok}, DirectAnswered
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

// CronSource is the built-in "cron" trigger source: scalers that ask for a
// fixed count during a daily window (see cronScaler). Admission checks its
// metadata as the scaler reads it, and refuses a query (a cron trigger reads
// none) and any type but AverageValue.
func CronSource() Source {
	return Source{Types: []TargetType{TargetAverageValue}, Validate: validateCron, New: newCronScaler}
}

// cronKeys are the metadata keys a cron trigger reads.
var cronKeys = []string{"days", "desiredReplicas", "end", "start", "timezone"}

// cronProblem is one metadata value the cron scaler cannot use.
type cronProblem struct{ key, msg string }

// parseCron reads a cron trigger's metadata into s, returning every value
// it cannot use. Both admission and the scaler read metadata with it.
func parseCron(md map[string]string, s *cronScaler) []cronProblem {
	var probs []cronProblem
	var ok bool
	s.replicas = 1
	if s.start, ok = clockMinutes(md["start"]); !ok {
		probs = append(probs, cronProblem{"start", "must be a time of day written HH:mm, such as 08:00: the window opens then"})
	}
	if s.end, ok = clockMinutes(md["end"]); !ok {
		probs = append(probs, cronProblem{"end", "must be a time of day written HH:mm, such as 19:00: the window closes then"})
	} else if s.end == s.start {
		probs = append(probs, cronProblem{"end", "must differ from start: the window would be empty"})
	}
	if tz := md["timezone"]; tz != "" && !knownZone(tz) {
		probs = append(probs, cronProblem{"timezone", "must be an IANA time zone such as Europe/Paris; leave it out for UTC"})
	} else {
		s.loc, _ = time.LoadLocation(tz)
	}
	var err error
	if s.days, err = parseWeekdays(md["days"]); err != nil {
		probs = append(probs, cronProblem{"days", err.Error()})
	}
	if v, set := md["desiredReplicas"]; set {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			probs = append(probs, cronProblem{"desiredReplicas", "must be an integer of at least 0, written as a string such as \"3\""})
		}
		s.replicas = n
	}
	for k := range md {
		if !slices.Contains(cronKeys, k) {
			probs = append(probs, cronProblem{k, "is not read by a cron trigger"})
		}
	}
	slices.SortStableFunc(probs, func(a, b cronProblem) int { return strings.Compare(a.key, b.key) })
	return probs
}

// validateCron is V11 for cron triggers: the metadata the scaler reads is
// usable and holds nothing else, and there is no query.
func validateCron(t Trigger, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Query != "" {
		errs = append(errs, field.Forbidden(p.Child("query"), "a cron trigger reads its window from metadata, not a query; remove query"))
	}
	if len(t.Metadata) == 0 {
		return append(errs, field.Required(p.Child("metadata"), `a cron trigger needs its window, e.g. {start: "08:00", end: "19:00"}`))
	}
	probs := parseCron(t.Metadata, &cronScaler{})
	for _, pr := range probs {
		mp := p.Child("metadata").Key(pr.key)
		v, set := t.Metadata[pr.key]
		switch {
		case !slices.Contains(cronKeys, pr.key):
			errs = append(errs, field.NotSupported(mp, pr.key, cronKeys))
		case !set:
			errs = append(errs, field.Required(mp, pr.msg))
		default:
			errs = append(errs, field.Invalid(mp, v, pr.msg))
		}
	}
	return errs
}

func newCronScaler(_ context.Context, cfg ScalerConfig) (Scaler, error) {
	t := cfg.Trigger
	if t.Type != TargetAverageValue {
		return nil, fmt.Errorf("type %q: a cron trigger needs type %s", t.Type, TargetAverageValue)
	}
	s := &cronScaler{metric: triggerMetric(t)}
	probs := parseCron(t.Metadata, s)
	if len(probs) == 0 {
		return s, nil
	}
	errs := make([]error, len(probs))
	for i, pr := range probs {
		errs[i] = fmt.Errorf("metadata.%s %q: %s", pr.key, t.Metadata[pr.key], pr.msg)
	}
	return nil, errors.Join(errs...)
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
