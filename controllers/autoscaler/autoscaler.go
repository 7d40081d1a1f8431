package autoscaler

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/endpoints"
	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/foreign"
	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/scalings"
	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/workers"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// Options configures the autoscaler. Every zero value means the
// documented default; without Views there is nothing to scale.
type Options struct {
	// Views are the profiled kinds; each gets its own loop.
	Views []*profile.Compiled
	// PollingInterval is the tick period of workloads whose config sets no
	// pollingIntervalSeconds. Default 15 s (configv1alpha2.Autoscaler).
	PollingInterval time.Duration
	// Sources build the triggers' scalers; triggers naming none use
	// Sources.Default(). Required: give the webhook the same value
	// (NewSources builds the usual ones).
	Sources *scaling.Sources
	// RequestQueries is called with a workload's trigger queries
	// (placeholders expanded) whose source is "promql" when its scalers
	// are built, so the embedded store requests their metric names before
	// the first scrape, and with none when its triggers stop being read
	// (changed, workload deleted or no longer managed), so names no trigger
	// reads leave the store's registry. owner names the workload. Pass the
	// store registry's SetOwner; an error makes the workload's promql
	// triggers invalid.
	RequestQueries func(owner string, queries ...string) error
	// SampleTimeout bounds one trigger's sample, also when the scaler
	// ignores its context. Default 10 s.
	SampleTimeout time.Duration
	// CloseTimeout bounds closing a workload's scalers (deletion, changed
	// triggers), also when a scaler ignores its context. Default
	// DefaultCloseTimeout.
	CloseTimeout time.Duration
	// TickTimeout bounds the samples of all triggers of one workload in
	// one tick, so a workload with many slow triggers holds a worker for
	// one budget, not one timeout per trigger. Default 15 s.
	TickTimeout time.Duration
	// Tolerance and DownscaleStabilization are the process-wide HPA knobs
	// (scaling.DecideInput); nil means the HPA's defaults.
	Tolerance              *float64
	DownscaleStabilization *time.Duration
	// HistoryLength is how many ticks the explain endpoint keeps per
	// workload. Default DefaultHistoryLength.
	HistoryLength int
	// MaxConcurrentReconciles per kind. Default 4: sampling is mostly
	// waiting on the store or a remote server.
	MaxConcurrentReconciles int
	// ForeignCheckInterval is how often the loop asks the RESTMapper
	// whether KEDA's ScaledObject is served. Default 30 s.
	ForeignCheckInterval time.Duration
	// Namespace is scaleplane's own namespace, where the Scalings of
	// cluster-scoped workloads live. Default scaleplane-system.
	Namespace string
	// Owner is the owner of the HPA controller running beside this
	// autoscaler (controllers.Options.Owner; the binary's webhook.owner,
	// an embedder's scaleplane.Options.Owner): an HPA of a workload
	// labelled for another owner is a foreign autoscaler (C5) to the
	// Scaling as it is to that controller. Default "scaleplane".
	Owner string
	// ScalingWrites bounds the writes of Scaling objects.
	ScalingWrites ScalingWrites
	// SkipNameValidation lets several managers in one process register
	// the same controller names; only tests need it.
	SkipNameValidation bool
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

func (o *Options) defaults() {
	if o.PollingInterval <= 0 {
		o.PollingInterval = time.Duration(configv1alpha2.DefaultPollingIntervalSeconds) * time.Second
	}
	if o.SampleTimeout <= 0 {
		o.SampleTimeout = 10 * time.Second
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = DefaultCloseTimeout
	}
	if o.TickTimeout <= 0 {
		o.TickTimeout = 15 * time.Second
	}
	if o.HistoryLength <= 0 {
		o.HistoryLength = DefaultHistoryLength
	}
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = 4
	}
	if o.ForeignCheckInterval <= 0 {
		o.ForeignCheckInterval = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Namespace == "" {
		o.Namespace = "scaleplane-system"
	}
	if o.Owner == "" {
		o.Owner = configv1alpha2.DefaultOwner
	}
}

// Autoscaler is the trigger autoscaler of every profiled kind. Build it
// with New before the manager exists (its HTTP handler and Discoverer are
// needed to configure the metrics server and the scraper), then call
// SetupWithManager.
type Autoscaler struct {
	opts Options
	// kindsMu guards kinds and byResource: kinds started at run time
	// (StartKind, for ScaleProfiles) join and leave while the endpoints,
	// the scraper and the Scaling watch read them. Taken before any
	// loop's lock, never under one (lock order, lifecycle.go).
	kindsMu sync.RWMutex
	kinds   []*kindLoop
	// byResource finds a kind by plural, plural.group or lower-case kind,
	// as the URL paths name it.
	byResource map[string]*kindLoop

	// Set by SetupWithManager; nil before, when the endpoints answer 503.
	env atomic.Pointer[env]
	// mgr is the manager the autoscaler was set up with: it belongs to one.
	mgr manager.Manager
	// alwaysOffer builds and offers the Scaling status on every reconcile
	// (offerkey.go's shortcut off), for the tests that compare the two.
	alwaysOffer bool
}

// Owner is Options.Owner: the owner whose HPAs are not foreign to the
// Scalings. scaleplane's Builder refuses an autoscaler whose owner is not
// its Options.Owner.
func (a *Autoscaler) Owner() string { return a.opts.Owner }

// env is what the loop needs from the manager.
type env struct {
	cache  client.Reader
	writer client.Client
	// events are the controllers' core/v1 recorder (controllers.EventRecorder):
	// one way to record events, whose correlator keeps the newest message
	// of a repeated reason.
	events record.EventRecorder
	// foreign is nil in unit tests that run without a manager.
	foreign *foreign.Finder
	// scalings writes Scaling objects; nil in unit tests without one.
	scalings *scalings.Writer
	// activity records POST /activity/... in Scalings; nil in unit tests.
	activity *scalings.ActivityWriter
	// api reads past the cache and elected is closed once this replica
	// leads (both nil in unit tests: activity is then recorded in memory
	// only, as on a leader).
	api     client.Reader
	elected <-chan struct{}
}

// leader reports whether this replica runs the loops.
func (e *env) leader() bool {
	if e.elected == nil {
		return true
	}
	select {
	case <-e.elected:
		return true
	default:
		return false
	}
}

// New validates opts and builds the autoscaler; nothing runs until the
// manager starts.
func New(opts Options) (*Autoscaler, error) {
	if opts.Sources == nil {
		return nil, errors.New("new autoscaler: Options.Sources is required; build them with NewSources and give the webhook the same value")
	}
	opts.defaults()
	a := &Autoscaler{opts: opts, byResource: map[string]*kindLoop{}}
	for _, v := range opts.Views {
		if _, err := a.addKind(v); err != nil {
			return nil, fmt.Errorf("new autoscaler: %w", err)
		}
	}
	return a, nil
}

// addKind adds the loop of v's kind.
func (a *Autoscaler) addKind(v *profile.Compiled) (*kindLoop, error) {
	a.kindsMu.Lock()
	defer a.kindsMu.Unlock()
	for _, k := range a.kinds {
		if k.view.GVK() == v.GVK() {
			return nil, fmt.Errorf("two profiles for %s: keep one", v.GVK())
		}
	}
	k := newKindLoop(a, v)
	a.kinds = append(a.kinds, k)
	gvr := v.GVR()
	for _, name := range []string{gvr.Resource, gvr.Resource + "." + gvr.Group, strings.ToLower(v.GVK().Kind)} {
		if _, taken := a.byResource[name]; !taken {
			a.byResource[name] = k
		}
	}
	return k, nil
}

// removeKind takes k's loop out of the lists; its controller has stopped.
func (a *Autoscaler) removeKind(k *kindLoop) {
	a.kindsMu.Lock()
	defer a.kindsMu.Unlock()
	a.kinds = slices.DeleteFunc(a.kinds, func(x *kindLoop) bool { return x == k })
	for name, x := range a.byResource {
		if x == k {
			delete(a.byResource, name)
		}
	}
	// A name another kind shares (a lower-case kind) points at it again.
	for _, x := range a.kinds {
		gvr := x.view.GVR()
		for _, name := range []string{gvr.Resource, gvr.Resource + "." + gvr.Group, strings.ToLower(x.view.GVK().Kind)} {
			if _, taken := a.byResource[name]; !taken {
				a.byResource[name] = x
			}
		}
	}
}

// Kinds are the profiled kinds the autoscaler runs now: those it was set
// up with and those started at run time (StartKind).
func (a *Autoscaler) Kinds() []*profile.Compiled {
	kinds := a.kindList()
	out := make([]*profile.Compiled, len(kinds))
	for i, k := range kinds {
		out[i] = k.view
	}
	return out
}

// kindList is a copy of the loops, to range over without holding kindsMu.
func (a *Autoscaler) kindList() []*kindLoop {
	a.kindsMu.RLock()
	defer a.kindsMu.RUnlock()
	return slices.Clone(a.kinds)
}

// Sources are the trigger sources the autoscaler builds scalers from; give
// the validating webhook the same value.
func (a *Autoscaler) Sources() *scaling.Sources { return a.opts.Sources }

// kindFor finds the loop of a resource named in a URL, or a 404 naming
// the known resources when there is none.
func (a *Autoscaler) kindFor(resource string) (*kindLoop, error) {
	a.kindsMu.RLock()
	k, ok := a.byResource[strings.ToLower(resource)]
	a.kindsMu.RUnlock()
	if ok {
		return k, nil
	}
	kinds := a.kindList()
	known := make([]string, 0, len(kinds))
	for _, k := range kinds {
		known = append(known, k.resource)
	}
	sort.Strings(known)
	return nil, &endpoints.Problem{Status: http.StatusNotFound, Message: fmt.Sprintf("resource %q is not profiled; use one of: %s", resource, strings.Join(known, ", "))}
}

// kindLoop is the autoscaler of one profiled kind: the controller's
// reconciler and the memory of its workloads.
type kindLoop struct {
	a              *Autoscaler
	view           *profile.Compiled
	kind, resource string
	apiVersion     string
	defaultMetrics []autoscalingv2.MetricSpec
	podLabels      map[string]string
	// podLabelsOf reads the pod labels from each object instead, for a
	// kind whose objects say where their pods are (a ScaleHandle's
	// spec.pods); nil for every other kind.
	podLabelsOf func(u *unstructured.Unstructured) map[string]string

	mu        sync.RWMutex
	workloads map[types.NamespacedName]*workload

	// shares is each namespace's share of the kind's workers; deferred
	// counts the reconciles put back for it.
	shares   workers.Shares
	deferred atomic.Uint64

	// wake enqueues a workload now (activity, dependencies); consumed by a
	// source.Channel of the kind's controller.
	wake chan event.GenericEvent

	// running is the reconciles in flight (the worker gauges).
	running workers.InFlight
}

func newKindLoop(a *Autoscaler, v *profile.Compiled) *kindLoop {
	p := v.Spec()
	return &kindLoop{
		a:              a,
		view:           v,
		kind:           v.GVK().Kind,
		apiVersion:     v.GVK().GroupVersion().String(),
		resource:       v.GVR().Resource,
		defaultMetrics: p.DefaultMetrics,
		podLabels:      p.Pods.Labels,
		podLabelsOf:    podLabelsOf(v),
		workloads:      map[types.NamespacedName]*workload{},
		wake:           make(chan event.GenericEvent, 1024),
	}
}

// newObject is an empty object of the kind, as SetGroupVersionKind makes
// it, without composing the apiVersion again on every reconcile.
func (k *kindLoop) newObject() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": k.apiVersion, "kind": k.kind}}
}

// enqueue asks for a tick of st now. At most one wake-up per workload is
// in flight, so a burst of activity cannot fill the channel; when it is
// full anyway (or nobody drains it: a replica that is not the leader), the
// activity stays recorded and the next regular tick sees it.
func (k *kindLoop) enqueue(st *workload) {
	if !st.pending.CompareAndSwap(false, true) {
		return
	}
	u := k.newObject()
	u.SetNamespace(st.nn.Namespace)
	u.SetName(st.nn.Name)
	if !k.wakeObject(u) {
		st.pending.Store(false)
	}
}

// wakeObject queues a tick of u's workload, unless the channel is full.
func (k *kindLoop) wakeObject(u *unstructured.Unstructured) bool {
	select {
	case k.wake <- event.GenericEvent{Object: u}:
		return true
	default:
		return false
	}
}

// workload is the autoscaler's memory of one workload. Reconciles of one
// workload never overlap (the work queue guarantees it), so the fields
// only a tick uses need no lock. What the HTTP endpoints and the scraper
// read is published under mu, and activity is atomic, so that a slow
// sample never blocks a gateway's activity signal.
type workload struct {
	nn types.NamespacedName

	// Owned by the reconciler.
	history *scaling.History
	// scalers, and what they were built from (nil before the first
	// build): rebuilt only when the triggers change.
	scalers     []builtScaler
	scalersFrom *scalersKey
	// configFP is the whole config's fingerprint: a change makes the next
	// reconcile tick at once.
	configFP string
	// read is the last version of the object read (readcache.go).
	read     *objectRead
	lastTick time.Time
	// activitySeen is the latest activity a tick has consumed.
	activitySeen time.Time
	warned       warnings
	// throttled says which triggers of the last tick were not evaluated
	// for their namespace's fair share or budget; "" when none.
	throttled string
	// lastCurrent is the count the last tick decided on (planTick's
	// urgency when the workload went to zero since).
	lastCurrent int32
	// fallbackNote describes the triggers in fallback at the last tick,
	// "" when none was (noteFallback).
	fallbackNote string
	// gauges are the trigger names with a trigger_value series.
	gauges []string
	// desiredSeries and valueSeries (by trigger name) are the handles of
	// the workload's desired_replicas and trigger_value series, nil once
	// deleted (observe, deleteMetrics).
	desiredSeries prometheus.Gauge
	valueSeries   map[string]prometheus.Gauge
	// restored is set once the workload's Scaling was read for what a
	// previous leader left (syncScaling); scalingPrev is the status last
	// offered, for conditions' transition times.
	restored    bool
	scalingPrev *v1alpha1.ScalingStatus
	// offerKey is the key of the status last offered, when offered
	// (offerkey.go).
	offerKey offerKey
	offered  bool
	// scalingRead is the version of the Scaling readScaling decoded last,
	// scalingAt where that Scaling lives (scalingKey), once known.
	scalingRead *scalingRead
	scalingAt   types.NamespacedName
	// scalingObj is the metadata and spec offered with the Scaling's
	// status, built from scalingObjFrom (scalingObject).
	scalingObj     *unstructured.Unstructured
	scalingObjFrom scalingFrom

	// activity is the latest activity signal, in Unix nanoseconds.
	activity atomic.Int64
	// pending is set while a wake-up of this workload is queued.
	pending atomic.Bool

	mu       sync.Mutex
	state    State
	message  string
	interval time.Duration
	records  ring
	// lastRec is the last tick's record while Autoscaling, and changes the
	// decisions that changed (or tried to) the count, for the Scaling.
	lastRec *Record
	changes []v1alpha1.ScalingDecision
	// scrape is true when a trigger reads the embedded store, so the
	// workload's pods are scraped.
	scrape bool
	// podLabels are the workload's own pod labels, for a kind whose
	// objects name them (kindLoop.podLabelsOf); nil otherwise.
	podLabels map[string]string
}

func newWorkload(nn types.NamespacedName, n int) *workload {
	return &workload{nn: nn, history: &scaling.History{}, records: newRing(n), warned: warnings{}}
}

// recordActivity notes activity at t, never moving it back.
func (st *workload) recordActivity(t time.Time) {
	n := t.UnixNano()
	for {
		old := st.activity.Load()
		if n <= old || st.activity.CompareAndSwap(old, n) {
			return
		}
	}
}

// lastActivity is the latest activity signal, zero when none.
func (st *workload) lastActivity() time.Time {
	if n := st.activity.Load(); n != 0 {
		return time.Unix(0, n).UTC()
	}
	return time.Time{}
}

func (st *workload) explain(k *kindLoop) Explanation {
	st.mu.Lock()
	defer st.mu.Unlock()
	interval := st.interval
	if interval == 0 {
		interval = k.a.opts.PollingInterval
	}
	return Explanation{
		Group:                  k.group(),
		Kind:                   k.kind,
		Resource:               k.resource,
		Namespace:              st.nn.Namespace,
		Name:                   st.nn.Name,
		State:                  st.state,
		Message:                st.message,
		PollingIntervalSeconds: interval.Seconds(),
		LastActivity:           st.lastActivity(),
		Decisions:              st.records.list(),
	}
}

// currentState is the published state.
func (st *workload) currentState() State {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.state
}

// publish records what the autoscaler does with the workload, and the
// tick's record when there is one. Leaving Autoscaling forgets the
// History: when autoscaling resumes it starts like a new HPA, holding the
// count a person or the pause set for a downscale window instead of acting
// on stale recommendations.
func (st *workload) publish(s State, msg string, interval time.Duration, rec *Record) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if s != StateAutoscaling && st.state == StateAutoscaling {
		st.history = &scaling.History{}
		st.lastTick = time.Time{}
		st.lastRec = nil
	}
	st.state, st.message = s, msg
	if interval > 0 {
		st.interval = interval
	}
	if rec != nil {
		st.records.add(*rec)
		st.noteChange(rec)
		if s == StateAutoscaling {
			r := *rec
			st.lastRec = &r
		}
	}
}
