package externalscaler

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/externalscaler/pb"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/promql"
	"github.com/scaleplane/scaleplane/scaling"
)

// Options configures a Server. Sources and Reader are required.
type Options struct {
	// Sources build a trigger's scaler and check its query: pass the
	// autoscaler's, so that KEDA's answers come from the same sources,
	// evaluation and limits as the built-in autoscaler's decisions. Its
	// default source fills a trigger's absent one.
	Sources *scaling.Sources
	// Reader reads KEDA's ScaledObjects (normally the manager's cache), to
	// find the workload a ScaledObject scales.
	Reader client.Reader
	// Views are the profiled kinds: the pods of a ScaledObject's target of
	// one of these kinds are found by the profile's pod labels.
	Views []*profile.Compiled
	// Targets says which pods of a ScaledObject's target the scraper reads,
	// and how it labels their samples. Required: pass the trigger
	// autoscaler (autoscaler.Autoscaler implements it), so that one query
	// reads alike in a trigger and in KEDA.
	Targets Targets
	// Kinds, when set, gives the profiled kinds at the time of each call
	// instead of Views: the autoscaler's Kinds, which include kinds
	// activated at run time (ScaleProfiles).
	Kinds func() []*profile.Compiled
	// Request tells the embedded store which queries a trigger reads, so
	// that it keeps the series they select, and with no queries that the
	// trigger is gone (promql.Registry.SetOwner of the store's registry);
	// an error makes the trigger invalid.
	Request func(owner string, queries ...string) error
	// SampleTimeout bounds one evaluation. Default 10 s.
	SampleTimeout time.Duration
	// StreamInterval is how often StreamIsActive re-evaluates. Default 5 s.
	StreamInterval time.Duration
	// Idle is how long a trigger KEDA stopped asking about is remembered
	// (and its pods scraped). Default 10 minutes.
	Idle time.Duration
	// MaxTriggers bounds the triggers remembered at once, whatever callers
	// send. Default 10000.
	MaxTriggers int
	// MaxTriggersPerNamespace bounds the triggers of one namespace's
	// ScaledObjects, so one tenant cannot take every place of MaxTriggers.
	// Default 1000 (at most MaxTriggers).
	MaxTriggersPerNamespace int
	// MaxEvaluations bounds the evaluations running at once, over all
	// calls and streams: a flood of calls waits for a slot until its
	// SampleTimeout, then gets Unavailable, instead of taking every core.
	// Default 8. One namespace's calls take at most
	// MaxEvaluationsPerNamespace of them, and a freed slot goes to the
	// namespaces waiting in turn, so one ScaledObject's flood of calls
	// leaves the other namespaces' calls their pace.
	MaxEvaluations int
	// MaxEvaluationsPerNamespace is one namespace's share of
	// MaxEvaluations. Default half of it (at least 1).
	MaxEvaluationsPerNamespace int
	// MaxWaitingPerNamespace bounds one namespace's calls waiting for a
	// slot; past it that namespace's calls are refused at once. Default
	// a quarter of MaxWaiting (at least 1).
	MaxWaitingPerNamespace int
	// MaxWaiting bounds the calls waiting for an evaluation slot; past it a
	// call is refused at once (Unavailable, "busy") rather than holding a
	// goroutine and its request for up to SampleTimeout. Default
	// DefaultMaxWaiting.
	MaxWaiting int
	// MaxStreams bounds the open StreamIsActive and StreamMetricSpec
	// streams (each holds a goroutine; StreamIsActive evaluates every
	// StreamInterval), at most MaxStreamsPerTrigger of them per trigger.
	// Default 2*MaxTriggers: KEDA opens both for each external-push
	// trigger.
	MaxStreams int
	// MaxTriggerBytes bounds the metadata (keys and values) of all
	// triggers remembered at once, and a quarter of it those of one
	// namespace: MaxTriggers triggers of MaxMetadataBytes each would
	// otherwise be gigabytes. Default 32 MiB.
	MaxTriggerBytes int64
	// MaxMetadataBytes bounds a trigger's metadata (keys and values) in a
	// call; the server refuses gRPC messages much larger than that. Default
	// 64 KiB; keep it above the query length limit.
	MaxMetadataBytes int
	// Now is the clock. Default time.Now.
	Now func() time.Time
	Log logr.Logger
}

func (o Options) withDefaults() Options {
	if o.SampleTimeout <= 0 {
		o.SampleTimeout = 10 * time.Second
	}
	if o.StreamInterval <= 0 {
		o.StreamInterval = 5 * time.Second
	}
	if o.Idle <= 0 {
		o.Idle = 10 * time.Minute
	}
	if o.MaxTriggers <= 0 {
		o.MaxTriggers = 10000
	}
	if o.MaxTriggersPerNamespace <= 0 {
		o.MaxTriggersPerNamespace = min(1000, o.MaxTriggers)
	}
	if o.MaxEvaluations <= 0 {
		o.MaxEvaluations = 8
	}
	if o.MaxWaiting <= 0 {
		o.MaxWaiting = DefaultMaxWaiting
	}
	if o.MaxEvaluationsPerNamespace <= 0 {
		o.MaxEvaluationsPerNamespace = max(1, o.MaxEvaluations/2)
	}
	if o.MaxWaitingPerNamespace <= 0 {
		o.MaxWaitingPerNamespace = max(1, o.MaxWaiting/4)
	}
	if o.MaxStreams <= 0 {
		o.MaxStreams = 2 * o.MaxTriggers
	}
	if o.MaxMetadataBytes <= 0 {
		o.MaxMetadataBytes = 64 << 10
	}
	if o.MaxTriggerBytes <= 0 {
		o.MaxTriggerBytes = DefaultMaxTriggerBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Defaults of Options that the process's memory budget counts: 256
// waiting calls of up to 64 KiB each are 16 MiB.
const (
	DefaultMaxTriggerBytes = 32 << 20
	DefaultMaxWaiting      = 256
)

// Server implements KEDA's ExternalScaler service.
type Server struct {
	pb.UnimplementedExternalScalerServer
	opts Options

	mu       sync.Mutex
	triggers map[triggerKey]*trigger
	built    uint64
	// perNamespace counts triggers by namespace; bytes and nsBytes are
	// their metadata's size, in all and by namespace.
	perNamespace map[string]int
	bytes        int64
	nsBytes      map[string]int64
	// streams counts the open streams by trigger, nstreams all of them.
	streams  map[triggerKey]int
	nstreams int

	// evals hands out Options.MaxEvaluations slots fairly among
	// namespaces; waiting counts the calls waiting for one.
	evals   *promql.Fair
	waiting atomic.Int64

	// quit ends the streams when Serve stops: they would otherwise last
	// until KEDA hangs up.
	quit     chan struct{}
	quitOnce sync.Once
}

// New returns a Server; serve it with Serve or register it on a gRPC server
// of your own (pb.RegisterExternalScalerServer).
func New(opts Options) (*Server, error) {
	if opts.Sources == nil || opts.Reader == nil || opts.Targets == nil {
		return nil, errors.New("external scaler: Sources, Reader and Targets are required; pass the autoscaler's sources and the autoscaler as Targets")
	}
	opts = opts.withDefaults()
	// Budgets of samples and time are the sources' (promql.FairSource):
	// these slots only share the calls.
	evals, err := promql.NewFair(promql.FairOptions{Slots: opts.MaxEvaluations, SlotsPerNamespace: opts.MaxEvaluationsPerNamespace,
		MaxWaitingPerNamespace: opts.MaxWaitingPerNamespace, SamplesPerMinute: -1, EvalTimePerMinute: -1, Now: opts.Now})
	if err != nil {
		return nil, err
	}
	return &Server{
		opts:         opts,
		triggers:     map[triggerKey]*trigger{},
		perNamespace: map[string]int{},
		nsBytes:      map[string]int64{},
		streams:      map[triggerKey]int{},
		evals:        evals,
		quit:         make(chan struct{}),
	}, nil
}

// triggerKey is one trigger of one ScaledObject: KEDA sends the trigger's
// whole metadata with every call, and one ScaledObject may have several
// triggers pointing here. The metadata is kept as a digest: a key must not
// cost what a caller chose to send.
type triggerKey struct {
	namespace, name string
	metadata        [sha256.Size]byte
}

func keyOf(ref *pb.ScaledObjectRef) triggerKey {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(ref.GetScalerMetadata())) {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(ref.GetScalerMetadata()[k]))
		h.Write([]byte{0})
	}
	key := triggerKey{namespace: ref.GetNamespace(), name: ref.GetName()}
	h.Sum(key.metadata[:0])
	return key
}

// trigger is what a ScaledObject's trigger was resolved to.
type trigger struct {
	// metadata is what KEDA sent, to tell whether the ScaledObject still
	// declares it.
	metadata map[string]string
	spec     spec
	scaler   scaling.Scaler
	// scrape is what the scraper reads for it; nil for a remote source.
	// target is the name of the workload it reads.
	scrape *promql.Workload
	target string
	// owner names its queries in the store's registry; "" when it
	// requested none.
	owner    string
	lastUsed time.Time
	// namespace is the ScaledObject's, whose share of the evaluation
	// slots its evaluations take.
	namespace string
	// size is its metadata's, counted against Options.MaxTriggerBytes.
	size int64
}

// release closes the scaler and withdraws the trigger's queries from the
// store, so a forgotten trigger's series are no longer kept.
func (s *Server) release(t *trigger) {
	_ = t.scaler.Close(context.Background())
	if t.owner != "" && s.opts.Request != nil {
		_ = s.opts.Request(t.owner)
	}
}

// checkRef refuses a reference that names no possible object, or whose
// metadata is larger than any trigger's needs to be, before anything is
// read or hashed.
func (s *Server) checkRef(ref *pb.ScaledObjectRef) error {
	if ref.GetName() == "" || ref.GetNamespace() == "" {
		return status.Error(codes.InvalidArgument, "scaledObjectRef needs a name and a namespace")
	}
	if msgs := validation.IsDNS1123Label(ref.GetNamespace()); len(msgs) > 0 {
		return status.Errorf(codes.InvalidArgument, "scaledObjectRef.namespace is not a namespace name: %s", strings.Join(msgs, "; "))
	}
	if msgs := validation.IsDNS1123Subdomain(ref.GetName()); len(msgs) > 0 {
		return status.Errorf(codes.InvalidArgument, "scaledObjectRef.name is not an object name: %s", strings.Join(msgs, "; "))
	}
	n := 0
	for k, v := range ref.GetScalerMetadata() {
		n += len(k) + len(v)
	}
	if n > s.opts.MaxMetadataBytes {
		return status.Errorf(codes.InvalidArgument, "ScaledObject %s/%s: the trigger's metadata has %d bytes, over the limit of %d: shorten metadata.%s",
			ref.GetNamespace(), ref.GetName(), n, s.opts.MaxMetadataBytes, MetadataQuery)
	}
	return nil
}

// scaledObject reads the ScaledObject ref names and requires one of its
// triggers of type external or external-push to have exactly ref's
// metadata, as KEDA sends it. Whoever reaches the port can name any
// ScaledObject; this keeps them to the triggers its owner declared, so a
// forged reference neither runs a query of its own choosing nor keeps a
// removed trigger (and its scraping) alive.
//
// The caller is not authenticated, so every reference it may not use gets
// the same answer, undeclaredRef: a ScaledObject that does not exist, one
// without such a trigger and one whose trigger reads keys from the
// environment are told apart only in this process's log, never to the
// caller (which would learn which ScaledObjects exist in every namespace,
// and the names of the keys that hold secrets).
func (s *Server) scaledObject(ctx context.Context, ref *pb.ScaledObjectRef) (*unstructured.Unstructured, error) {
	what := fmt.Sprintf("ScaledObject %s/%s", ref.GetNamespace(), ref.GetName())
	so := &unstructured.Unstructured{}
	so.SetGroupVersionKind(controllers.ScaledObjectGVK)
	if err := s.opts.Reader.Get(ctx, types.NamespacedName{Namespace: ref.GetNamespace(), Name: ref.GetName()}, so); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			s.opts.Log.V(1).Info("call for a ScaledObject that does not exist", "scaledObject", ref.GetNamespace()+"/"+ref.GetName())
			return nil, undeclaredRef(what)
		case meta.IsNoMatchError(err):
			return nil, status.Errorf(codes.FailedPrecondition, "%s: the API server does not serve KEDA's ScaledObjects", what)
		}
		return nil, status.Errorf(codes.Unavailable, "read %s: %v", what, err)
	}
	if !declares(so, ref.GetScalerMetadata()) {
		s.opts.Log.V(1).Info("call with metadata no external trigger of the ScaledObject declares", "scaledObject", ref.GetNamespace()+"/"+ref.GetName(), "fromEnvKeys", fromEnv(so))
		return nil, undeclaredRef(what)
	}
	return so, nil
}

// undeclaredRef is the one answer to a reference scaleplane does not
// serve, whatever the reason. It says every reason a legitimate caller
// (KEDA, for a ScaledObject its owner wrote) can have: KEDA sends the value
// of a key ending in FromEnv from the environment, not the ScaledObject's.
func undeclaredRef(what string) error {
	return status.Errorf(codes.NotFound, "%s does not exist or has no trigger of type external or external-push with this metadata: scaleplane answers only the triggers a ScaledObject declares, with the metadata as written (just after an edit, KEDA's next call matches; metadata keys ending in FromEnv are not supported: write the value itself)", what)
}

// declares reports whether so has an external or external-push trigger
// whose metadata is md, key for key.
func declares(so *unstructured.Unstructured, md map[string]string) bool {
	spec, _ := so.Object["spec"].(map[string]any)
	triggers, _ := spec["triggers"].([]any)
	for _, tr := range triggers {
		m, _ := tr.(map[string]any)
		if typ, _ := m["type"].(string); typ != "external" && typ != "external-push" {
			continue
		}
		have, _ := m["metadata"].(map[string]any)
		if len(have) != len(md) {
			continue
		}
		same := true
		for k, v := range md {
			if hv, ok := have[k].(string); !ok || hv != v {
				same = false
				break
			}
		}
		if same {
			return true
		}
	}
	return false
}

// fromEnv reports whether an external trigger of so has a metadata key
// that KEDA resolves from the environment.
func fromEnv(so *unstructured.Unstructured) bool {
	spec, _ := so.Object["spec"].(map[string]any)
	triggers, _ := spec["triggers"].([]any)
	for _, tr := range triggers {
		m, _ := tr.(map[string]any)
		if typ, _ := m["type"].(string); typ != "external" && typ != "external-push" {
			continue
		}
		md, _ := m["metadata"].(map[string]any)
		for k := range md {
			if strings.HasSuffix(k, "FromEnv") {
				return true
			}
		}
	}
	return false
}

// forget releases the trigger of key, if any: its ScaledObject or the
// trigger itself is gone.
func (s *Server) forget(key triggerKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.triggers[key]; ok {
		s.dropLocked(key, t)
	}
}

// resolve finds or builds the trigger ref names. Every call reads the
// ScaledObject again (from the cache), so the answer is for a trigger that
// is declared now. Errors are gRPC statuses whose message says what to
// change.
func (s *Server) resolve(ctx context.Context, ref *pb.ScaledObjectRef) (*trigger, error) {
	if err := s.checkRef(ref); err != nil {
		return nil, err
	}
	key := keyOf(ref)
	so, err := s.scaledObject(ctx, ref)
	if err != nil {
		if status.Code(err) == codes.NotFound {
			s.forget(key)
		}
		return nil, err
	}
	now := s.opts.Now()
	s.mu.Lock()
	if t, ok := s.triggers[key]; ok {
		t.lastUsed = now
		s.mu.Unlock()
		return t, nil
	}
	s.expireLocked(now)
	s.dropUndeclaredLocked(key, so)
	size := metadataSize(ref.GetScalerMetadata())
	full := s.fullLocked(ref.GetNamespace(), size)
	s.built++
	owner := fmt.Sprintf("keda/%s/%s/%d", ref.GetNamespace(), ref.GetName(), s.built)
	s.mu.Unlock()
	if full != nil {
		return nil, full
	}

	t, err := s.build(ctx, ref, so, owner)
	if err != nil {
		return nil, err
	}
	t.lastUsed = now
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.triggers[key]; ok {
		// Built twice by concurrent first calls: keep the first.
		s.release(t)
		old.lastUsed = now
		return old, nil
	}
	s.dropUndeclaredLocked(key, so)
	if full := s.fullLocked(ref.GetNamespace(), size); full != nil {
		// Concurrent first calls of different triggers each saw room.
		s.release(t)
		return nil, full
	}
	s.triggers[key] = t
	s.perNamespace[key.namespace]++
	t.size = size
	s.bytes += size
	s.nsBytes[key.namespace] += size
	return t, nil
}

// dropUndeclaredLocked forgets the triggers of key's ScaledObject that so
// no longer declares. A new trigger of a ScaledObject is usually an edit of
// it: the old one is forgotten now, not after Idle, so its pods and series
// are not kept meanwhile and it takes no place of the limits.
func (s *Server) dropUndeclaredLocked(key triggerKey, so *unstructured.Unstructured) {
	for k, old := range s.triggers {
		if k.namespace == key.namespace && k.name == key.name && !declares(so, old.metadata) {
			s.dropLocked(k, old)
		}
	}
}

// fullLocked says why one more trigger of namespace cannot be kept, or
// nil.
func (s *Server) fullLocked(namespace string, size int64) error {
	switch {
	case s.bytes+size > s.opts.MaxTriggerBytes:
		return status.Errorf(codes.ResourceExhausted, "scaleplane keeps at most %d bytes of external trigger metadata at once; remove unused ScaledObjects or shorten their metadata", s.opts.MaxTriggerBytes)
	case s.nsBytes[namespace]+size > s.opts.MaxTriggerBytes/4:
		return status.Errorf(codes.ResourceExhausted, "scaleplane keeps at most %d bytes of one namespace's external trigger metadata at once, and %s has that much; remove unused ScaledObjects there or shorten their metadata", s.opts.MaxTriggerBytes/4, namespace)
	case len(s.triggers) >= s.opts.MaxTriggers:
		return status.Errorf(codes.ResourceExhausted, "scaleplane serves at most %d external triggers at once; remove unused ScaledObjects or raise the limit", s.opts.MaxTriggers)
	case s.perNamespace[namespace] >= s.opts.MaxTriggersPerNamespace:
		return status.Errorf(codes.ResourceExhausted, "scaleplane serves at most %d external triggers of one namespace at once, and %s has that many; remove unused ScaledObjects there", s.opts.MaxTriggersPerNamespace, namespace)
	}
	return nil
}

// dropLocked forgets the trigger of key.
func (s *Server) dropLocked(key triggerKey, t *trigger) {
	s.release(t)
	delete(s.triggers, key)
	if s.perNamespace[key.namespace]--; s.perNamespace[key.namespace] <= 0 {
		delete(s.perNamespace, key.namespace)
	}
	s.bytes -= t.size
	if s.nsBytes[key.namespace] -= t.size; s.nsBytes[key.namespace] <= 0 {
		delete(s.nsBytes, key.namespace)
	}
}

// metadataSize is what a trigger's metadata holds, keys and values.
func metadataSize(md map[string]string) int64 {
	n := int64(0)
	for k, v := range md {
		n += int64(len(k) + len(v))
	}
	return n
}

// build reads the metadata and the ScaledObject's target and builds the
// scaler.
func (s *Server) build(ctx context.Context, ref *pb.ScaledObjectRef, so *unstructured.Unstructured, owner string) (*trigger, error) {
	what := fmt.Sprintf("ScaledObject %s/%s", ref.GetNamespace(), ref.GetName())
	sp, errs := parseMetadata(ref.GetScalerMetadata(), s.opts.Sources)
	if len(errs) > 0 {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %s", what, errs.ToAggregate().Error())
	}
	apiVersion, kind, name := controllers.ScaledObjectTarget(so)
	if errs := validateTarget(kind, name); len(errs) > 0 {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %s", what, errs.ToAggregate().Error())
	}
	vars := map[string]string{"kind": kind}
	var view *profile.Compiled
	if gv, err := schema.ParseGroupVersion(apiVersion); err == nil {
		views := s.opts.Views
		if s.opts.Kinds != nil {
			views = s.opts.Kinds()
		}
		for _, v := range views {
			if g := v.GVK(); g.Group == gv.Group && g.Kind == kind {
				view = v
				vars["resource"] = v.GVR().Resource
			}
		}
	}

	t := &trigger{spec: sp, metadata: maps.Clone(ref.GetScalerMetadata()), namespace: ref.GetNamespace(), target: name}
	if sp.trigger.Source == scaling.SourcePromQL {
		switch {
		case sp.podSelector != nil:
			w := s.opts.Targets.ScrapeWorkload(kind, nil, ref.GetNamespace(), name)
			w.Selector = sp.podSelector
			t.scrape = &w
		case view != nil && len(view.Spec().Pods.Labels) > 0:
			w := s.opts.Targets.ScrapeWorkload(kind, view.Spec().Pods.Labels, ref.GetNamespace(), name)
			t.scrape = &w
		default:
			return nil, status.Errorf(codes.FailedPrecondition,
				"%s: its target %s %s has no scaleplane profile with pod labels, so scaleplane does not know which pods to scrape: set metadata.%s to their labels (e.g. app=%s)",
				what, kind, name, MetadataPodSelector, name)
		}
		// The store holds every namespace's pods, and KEDA shows the value
		// in the ScaledObject's namespace (its HPA's status): the query
		// reads only series of that namespace, which every scraped sample
		// carries as its namespace label.
		all := map[string]string{"namespace": ref.GetNamespace(), "name": name}
		maps.Copy(all, vars)
		query, err := promql.Expand(sp.trigger.Query, all)
		if err == nil {
			query, err = promql.RequireLabel(query, "namespace", ref.GetNamespace())
		}
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "%s: metadata.%s: %v", what, MetadataQuery, err)
		}
		sp.trigger.Query = query
		t.spec = sp
	}
	sc, err := s.opts.Sources.NewScaler(ctx, scaling.ScalerConfig{Trigger: sp.trigger, Namespace: ref.GetNamespace(), Name: name, Vars: vars})
	var le *promql.LimitError
	switch {
	case errors.As(err, &le) && le.Bound == promql.BoundLength && sp.trigger.Source == scaling.SourcePromQL:
		// Within the limit as written, over it with the namespace
		// matchers added above.
		return nil, status.Errorf(codes.InvalidArgument,
			"%s: metadata.%s: with namespace=%q added to each of its selectors the query is %d bytes, over the limit of %d: write namespace=\"${namespace}\" in every selector (it is not added again) or shorten the query",
			what, MetadataQuery, ref.GetNamespace(), le.Value, le.Limit)
	case err != nil:
		return nil, status.Errorf(codes.FailedPrecondition, "%s: %v", what, err)
	}
	if t.scrape != nil && s.opts.Request != nil {
		if err := s.opts.Request(owner, sp.trigger.Query); err != nil {
			_ = sc.Close(ctx)
			return nil, status.Errorf(codes.InvalidArgument, "%s: metadata.%s: %v", what, MetadataQuery, err)
		}
		t.owner = owner
	}
	t.scaler = sc
	return t, nil
}

// expireLocked forgets triggers not asked about for Options.Idle.
func (s *Server) expireLocked(now time.Time) {
	for k, t := range s.triggers {
		if now.Sub(t.lastUsed) > s.opts.Idle {
			s.dropLocked(k, t)
		}
	}
}

// ScrapeWorkloads lists the pods to scrape for the triggers KEDA is asking
// about, for the scraper's discoverer. Triggers whose ScaledObject is gone
// or no longer declares them are forgotten first: KEDA stops asking about a
// deleted ScaledObject, and its pods should not be scraped until Idle.
func (s *Server) ScrapeWorkloads() []promql.Workload {
	s.forgetUndeclared()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(s.opts.Now())
	seen := map[string]bool{}
	var out []promql.Workload
	for _, t := range s.triggers {
		if t.scrape == nil {
			continue
		}
		id := t.scrape.Namespace + "\x00" + t.scrape.Selector.String() + "\x00" + t.target
		if seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, *t.scrape)
	}
	return out
}

// forgetUndeclared forgets the triggers their ScaledObjects no longer
// declare, reading each ScaledObject once, outside the lock (the cache's
// Get copies the object).
func (s *Server) forgetUndeclared() {
	byObject := map[types.NamespacedName]map[triggerKey]map[string]string{}
	s.mu.Lock()
	for k, t := range s.triggers {
		nn := types.NamespacedName{Namespace: k.namespace, Name: k.name}
		if byObject[nn] == nil {
			byObject[nn] = map[triggerKey]map[string]string{}
		}
		byObject[nn][k] = t.metadata
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.SampleTimeout)
	defer cancel()
	for nn, triggers := range byObject {
		so := &unstructured.Unstructured{}
		so.SetGroupVersionKind(controllers.ScaledObjectGVK)
		err := s.opts.Reader.Get(ctx, nn, so)
		if err != nil && !apierrors.IsNotFound(err) {
			// Not known to be gone: Idle decides.
			continue
		}
		for k, md := range triggers {
			if err != nil || !declares(so, md) {
				s.forget(k)
			}
		}
	}
}

// sample reads the trigger now. No data is an error, never zero: KEDA and
// its HPA keep the count when a scaler errs, as scaleplane's autoscaler
// does.
func (s *Server) sample(ctx context.Context, t *trigger) (scaling.Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.SampleTimeout)
	defer cancel()
	busy := func() error {
		return status.Errorf(codes.Unavailable, "trigger %s: scaleplane is busy (%d evaluations running, the most it runs at once, at most %d for namespace %s); KEDA asks again", t.spec.trigger.Name, s.opts.MaxEvaluations, s.opts.MaxEvaluationsPerNamespace, t.namespace)
	}
	if s.waiting.Add(1) > int64(s.opts.MaxWaiting)+int64(s.opts.MaxEvaluations) {
		s.waiting.Add(-1)
		return scaling.Sample{}, busy()
	}
	release, err := s.evals.Acquire(ctx, t.namespace)
	s.waiting.Add(-1)
	if err != nil {
		return scaling.Sample{}, busy()
	}
	defer release(promql.Cost{})
	smp, err := t.scaler.Sample(ctx, s.opts.Now())
	switch {
	case err != nil:
		return smp, status.Errorf(codes.Unavailable, "trigger %s: %v", t.spec.trigger.Name, err)
	case !smp.OK:
		return smp, status.Errorf(codes.Unavailable, "trigger %s: no data for %q (not read as zero: the count is kept)", t.spec.trigger.Name, t.spec.trigger.Query)
	case math.IsNaN(smp.Value) || math.IsInf(smp.Value, 0):
		return smp, status.Errorf(codes.Unavailable, "trigger %s: value is %v", t.spec.trigger.Name, smp.Value)
	}
	return smp, nil
}

// active is KEDA's IsActive: the scaler's own verdict, or a value above the
// activation threshold, exactly as scaling.Decide reads a trigger.
func active(t *trigger, smp scaling.Sample) bool {
	a := 0.0
	if p := t.spec.trigger.ActivationThreshold; p != nil {
		a = *p
	}
	return smp.Active || smp.Value > a
}

// MaxStreamsPerTrigger bounds the open streams of one trigger: KEDA opens
// a StreamIsActive and a StreamMetricSpec, and briefly two more while it
// rebuilds the ScaledObject's scalers.
const MaxStreamsPerTrigger = 4

// openStream counts a stream of ref's trigger, or refuses it past
// MaxStreamsPerTrigger or Options.MaxStreams. Call the returned func when
// the stream ends.
func (s *Server) openStream(ref *pb.ScaledObjectRef) (func(), error) {
	key := keyOf(ref)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.streams[key] >= MaxStreamsPerTrigger:
		return nil, status.Errorf(codes.ResourceExhausted, "ScaledObject %s/%s: this trigger already has %d open streams, the most scaleplane keeps; close one first", ref.GetNamespace(), ref.GetName(), MaxStreamsPerTrigger)
	case s.nstreams >= s.opts.MaxStreams:
		return nil, status.Errorf(codes.ResourceExhausted, "scaleplane keeps at most %d streams open at once; remove unused external-push ScaledObjects or raise the limit", s.opts.MaxStreams)
	}
	s.streams[key]++
	s.nstreams++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.nstreams--
		if s.streams[key]--; s.streams[key] <= 0 {
			delete(s.streams, key)
		}
	}, nil
}

// IsActive implements pb.ExternalScalerServer.
func (s *Server) IsActive(ctx context.Context, ref *pb.ScaledObjectRef) (*pb.IsActiveResponse, error) {
	t, err := s.resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	smp, err := s.sample(ctx, t)
	if err != nil {
		return nil, err
	}
	return &pb.IsActiveResponse{Result: active(t, smp)}, nil
}

// StreamIsActive implements pb.ExternalScalerServer for external-push
// triggers: it evaluates every StreamInterval and sends the result when it
// changes (and once at the start). A failed evaluation sends nothing, so
// KEDA keeps what it had.
func (s *Server) StreamIsActive(ref *pb.ScaledObjectRef, stream grpc.ServerStreamingServer[pb.IsActiveResponse]) error {
	ctx := stream.Context()
	// A reference that does not resolve opens no stream.
	if _, err := s.resolve(ctx, ref); err != nil {
		return err
	}
	done, err := s.openStream(ref)
	if err != nil {
		return err
	}
	defer done()
	tick := time.NewTicker(s.opts.StreamInterval)
	defer tick.Stop()
	var last *bool
	for {
		// Streaming is asking: keep the trigger (and its scraping) alive.
		t, err := s.resolve(ctx, ref)
		if err != nil {
			return err
		}
		if smp, err := s.sample(ctx, t); err != nil {
			s.opts.Log.V(1).Info("external-push evaluation failed", "scaledObject", ref.GetNamespace()+"/"+ref.GetName(), "error", err.Error())
		} else if a := active(t, smp); last == nil || *last != a {
			if err := stream.Send(&pb.IsActiveResponse{Result: a}); err != nil {
				return err
			}
			last = &a
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.quit:
			return status.Error(codes.Unavailable, "scaleplane is shutting down")
		case <-tick.C:
		}
	}
}

// toInt64 is f clamped to int64: converting a float beyond it is
// undefined in Go (on amd64 1e300 becomes -9223372036854775808), and
// KEDA reads the integer fields when the float ones are 0.
func toInt64(f float64) int64 {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

func metricSpec(t *trigger) *pb.GetMetricSpecResponse {
	th := t.spec.trigger.Threshold
	return &pb.GetMetricSpecResponse{MetricSpecs: []*pb.MetricSpec{{
		MetricName:      t.spec.trigger.Name,
		TargetSize:      toInt64(math.Ceil(th)),
		TargetSizeFloat: th,
	}}}
}

// GetMetricSpec implements pb.ExternalScalerServer: one metric whose target
// is the threshold.
func (s *Server) GetMetricSpec(ctx context.Context, ref *pb.ScaledObjectRef) (*pb.GetMetricSpecResponse, error) {
	t, err := s.resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	return metricSpec(t), nil
}

// StreamMetricSpec implements pb.ExternalScalerServer: the spec depends on
// the metadata alone, which a stream cannot change, so it is sent once.
func (s *Server) StreamMetricSpec(ref *pb.ScaledObjectRef, stream grpc.ServerStreamingServer[pb.GetMetricSpecResponse]) error {
	t, err := s.resolve(stream.Context(), ref)
	if err != nil {
		return err
	}
	done, err := s.openStream(ref)
	if err != nil {
		return err
	}
	defer done()
	if err := stream.Send(metricSpec(t)); err != nil {
		return err
	}
	select {
	case <-stream.Context().Done():
		return nil
	case <-s.quit:
		return status.Error(codes.Unavailable, "scaleplane is shutting down")
	}
}

// GetMetrics implements pb.ExternalScalerServer: the trigger's value now.
func (s *Server) GetMetrics(ctx context.Context, req *pb.GetMetricsRequest) (*pb.GetMetricsResponse, error) {
	t, err := s.resolve(ctx, req.GetScaledObjectRef())
	if err != nil {
		return nil, err
	}
	smp, err := s.sample(ctx, t)
	if err != nil {
		return nil, err
	}
	name := req.GetMetricName()
	if name == "" {
		name = t.spec.trigger.Name
	}
	return &pb.GetMetricsResponse{MetricValues: []*pb.MetricValue{{
		MetricName:       name,
		MetricValue:      toInt64(math.Round(smp.Value)),
		MetricValueFloat: smp.Value,
	}}}, nil
}

// Serve answers on lis until ctx ends, over TLS when creds is not nil
// (KEDA's enableTLS), else plaintext (KEDA's default for external scalers).
func (s *Server) Serve(ctx context.Context, lis net.Listener, creds credentials.TransportCredentials) error {
	// KEDA's calls carry one trigger's metadata; the default 4 MiB would
	// let any caller make every call cost that much.
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(s.opts.MaxMetadataBytes + 16<<10)}
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	g := grpc.NewServer(opts...)
	pb.RegisterExternalScalerServer(g, s)
	done := make(chan error, 1)
	go func() { done <- g.Serve(lis) }()
	var failed error
	select {
	case err := <-done:
		// The listener failed; the connections it accepted would go on
		// being served by nobody's server: end them too.
		failed = fmt.Errorf("external scaler on %s: %w", lis.Addr(), err)
	case <-ctx.Done():
	}
	s.quitOnce.Do(func() { close(s.quit) })
	stopped := make(chan struct{})
	go func() { g.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		g.Stop()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, t := range s.triggers {
		s.dropLocked(k, t)
	}
	return failed
}
