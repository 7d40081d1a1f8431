package devworld

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
)

// Defaults of Options.
const (
	DefaultStartupDelay       = 2 * time.Second
	DefaultMaxPodsPerWorkload = 64
	DefaultMaxPods            = 256
)

// Kind is one workload kind dev plays the operator of.
type Kind struct {
	GVK   schema.GroupVersionKind
	Shape Shape
	// Labels are the profile's pod labels (pods.labels); values may hold
	// ${name} and ${group}.
	Labels map[string]string
	// MemberGroupLabel is the profile's pods.memberGroupLabel: the label
	// holding a pod's member group (rack) name.
	MemberGroupLabel string
}

// SampleKinds are the kinds dev plays the operator of among profiles: the
// sample kinds (RackedCluster, Function, WorkerGroup), with the pod labels
// their profiles give.
func SampleKinds(profiles []v1alpha1.ScaleProfileSpec) []Kind {
	shapes := map[string]Shape{"RackedCluster": ShapeRacks, "Function": ShapeDeployment, "WorkerGroup": ShapeLeaders}
	var out []Kind
	for _, p := range profiles {
		shape, ok := shapes[p.Target.Kind]
		if !ok || p.Target.APIVersion != profile.SampleAPIVersion {
			continue
		}
		out = append(out, Kind{
			GVK:              schema.FromAPIVersionAndKind(p.Target.APIVersion, p.Target.Kind),
			Shape:            shape,
			Labels:           p.Pods.Labels,
			MemberGroupLabel: p.Pods.MemberGroupLabel,
		})
	}
	return out
}

// Options configures a World. RestConfig and Kinds are required; every
// other zero value means the documented default.
type Options struct {
	// RestConfig reaches the API server, which must listen on a loopback
	// address: dev's own control plane.
	RestConfig *rest.Config
	// Kinds are the kinds to play the operator of.
	Kinds []Kind
	// StartupDelay is how long a pod stays Pending before it is Running
	// and Ready. Default 2 s, long enough to see groups catch up.
	StartupDelay time.Duration
	// MaxPodsPerWorkload bounds one workload's pods; the rest are not
	// started and the workload's status counts only those that run.
	// Default 64.
	MaxPodsPerWorkload int
	// MaxPods bounds the pods (and loopback servers) of all workloads
	// together. Default 256.
	MaxPods int
	// Notify is told about what happens to pods (started, ready, stopped,
	// left out), one Notice per change, for dev's terminal. Optional.
	Notify func(Notice)
	// Log receives the controllers' logs. Default: controller-runtime's.
	Log logr.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Notice is one thing that happened to a workload's pods.
type Notice struct {
	Time      time.Time
	Kind      string
	Namespace string
	Name      string
	Message   string
}

// World is dev's operators and kubelet: a controller-runtime manager of its
// own (no leader election, no servers) and the pods' loopback servers.
type World struct {
	opts Options
	mgr  manager.Manager

	mu      sync.Mutex
	servers map[types.NamespacedName]*served
	// reported is the last pod state each workload's notices described.
	reported map[workloadKey]podState
}

// served is the server of one pod this process created.
type served struct {
	*podServer
	uid     types.UID
	owner   types.UID
	started time.Time
}

type workloadKey struct {
	kind string
	nn   types.NamespacedName
}

type podState struct {
	pods, ready, wanted int
	problems            string
}

// New checks opts and builds the World's manager. Nothing talks to the API
// server until Start.
func New(opts Options) (*World, error) {
	if opts.RestConfig == nil {
		return nil, errors.New("devworld: RestConfig is required")
	}
	if err := loopbackServer(opts.RestConfig.Host); err != nil {
		return nil, err
	}
	if opts.StartupDelay <= 0 {
		opts.StartupDelay = DefaultStartupDelay
	}
	if opts.MaxPodsPerWorkload <= 0 {
		opts.MaxPodsPerWorkload = DefaultMaxPodsPerWorkload
	}
	if opts.MaxPods <= 0 {
		opts.MaxPods = DefaultMaxPods
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log.GetSink() == nil {
		opts.Log = ctrl.Log.WithName("devworld")
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("devworld: build scheme: %w", err)
	}
	// Only dev's own pods and Deployments are cached.
	ours := labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedByValue})
	mgr, err := ctrl.NewManager(opts.RestConfig, ctrl.Options{
		Scheme:                 scheme,
		Logger:                 opts.Log,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:        {Label: ours},
			&appsv1.Deployment{}: {Label: ours},
		}},
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	})
	if err != nil {
		return nil, fmt.Errorf("devworld: build manager: %w", err)
	}
	w := &World{opts: opts, mgr: mgr, servers: map[types.NamespacedName]*served{}, reported: map[workloadKey]podState{}}
	for _, k := range opts.Kinds {
		if err := w.setup(k); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// loopbackServer refuses an API server address that is not on a loopback
// address: the World creates pods and writes workloads' status, which only
// dev's own control plane may get.
func loopbackServer(host string) error {
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		u = &url.URL{Host: host}
	}
	h := u.Hostname()
	if ip := net.ParseIP(h); (ip != nil && ip.IsLoopback()) || h == "localhost" {
		return nil
	}
	return fmt.Errorf("devworld: the API server %q is not on a loopback address; dev's sample pods are only made on dev's own control plane", host)
}

func (w *World) setup(k Kind) error {
	owner := &unstructured.Unstructured{}
	owner.SetGroupVersionKind(k.GVK)
	b := ctrl.NewControllerManagedBy(w.mgr).
		Named("devworld-"+strings.ToLower(k.GVK.Kind)).
		// Our own status writes change no generation: they need no pass.
		For(owner, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&corev1.Pod{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1})
	if k.Shape == ShapeDeployment {
		// The HPA scales the Deployment through /scale.
		b = b.Owns(&appsv1.Deployment{})
	}
	if err := b.Complete(&reconciler{w: w, kind: k}); err != nil {
		return fmt.Errorf("devworld: set up %s: %w", k.GVK.Kind, err)
	}
	return nil
}

// Start runs the operators until ctx ends, then stops every pod's server.
// The Pod objects stay (with --keep, the next dev replaces them: their
// servers are gone).
func (w *World) Start(ctx context.Context) error {
	defer w.stopAll()
	return w.mgr.Start(ctx)
}

func (w *World) stopAll() {
	w.mu.Lock()
	all := w.servers
	w.servers = map[types.NamespacedName]*served{}
	w.mu.Unlock()
	for _, s := range all {
		s.stop()
	}
}

// Pods reports how many pod servers run now.
func (w *World) Pods() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.servers)
}

// server returns the server of pod nn if this process runs it for uid.
func (w *World) server(nn types.NamespacedName) *served {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.servers[nn]
}

// reserve starts a server for pod nn unless MaxPods are running.
func (w *World) reserve(nn types.NamespacedName, owner types.UID) (*served, error) {
	w.mu.Lock()
	if len(w.servers) >= w.opts.MaxPods {
		w.mu.Unlock()
		return nil, errAtMaxPods
	}
	if old := w.servers[nn]; old != nil {
		w.mu.Unlock()
		return nil, fmt.Errorf("pod %s already has a server", nn)
	}
	// Reserved under the lock so that the count holds; the server itself
	// starts outside it.
	w.servers[nn] = &served{owner: owner}
	w.mu.Unlock()
	s, err := startPodServer(nn.Name)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		delete(w.servers, nn)
		return nil, err
	}
	sv := &served{podServer: s, owner: owner, started: w.opts.Now()}
	w.servers[nn] = sv
	return sv, nil
}

var errAtMaxPods = errors.New("at the limit of pods for all workloads")

// release stops pod nn's server, if this process runs one.
func (w *World) release(nn types.NamespacedName) {
	w.mu.Lock()
	s := w.servers[nn]
	delete(w.servers, nn)
	w.mu.Unlock()
	if s != nil && s.podServer != nil {
		s.stop()
	}
}

// ownedServers lists the pods this process serves for owner.
func (w *World) ownedServers(owner types.UID) []types.NamespacedName {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []types.NamespacedName
	for nn, s := range w.servers {
		if s.owner == owner {
			out = append(out, nn)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// report tells Notify what a reconcile of workload key changed: pods
// started and stopped, all pods ready (once the last ones became ready),
// pods left out (once per change).
func (w *World) report(key workloadKey, started, stopped, becameReady int, st podState) {
	w.mu.Lock()
	last := w.reported[key]
	if st == (podState{}) {
		delete(w.reported, key)
	} else {
		w.reported[key] = st
	}
	w.mu.Unlock()
	if w.opts.Notify == nil {
		return
	}
	var msgs []string
	if started > 0 {
		msgs = append(msgs, fmt.Sprintf("started %d pod(s), %d in all; Ready in %s", started, st.pods, w.opts.StartupDelay))
	}
	if stopped > 0 {
		msgs = append(msgs, fmt.Sprintf("stopped %d pod(s), %d left", stopped, st.pods))
	}
	if becameReady > 0 && st.ready == st.pods {
		msgs = append(msgs, fmt.Sprintf("%d/%d pods ready", st.ready, st.pods))
	}
	if st.problems != "" && st.problems != last.problems {
		msgs = append(msgs, st.problems)
	}
	for _, m := range msgs {
		w.opts.Notify(Notice{Time: w.opts.Now(), Kind: key.kind, Namespace: key.nn.Namespace, Name: key.nn.Name, Message: m})
	}
}
