package scaleplane

import (
	"context"
	"errors"
	"fmt"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
	"github.com/scaleplane/scaleplane/webhooks"
)

// Options configures scaleplane on one manager.
type Options struct {
	// Owner names the embedding operator (required): a DNS label, e.g.
	// "cache-operator". It names the webhook configurations, their label
	// and entries (see the package doc) and the controllers
	// (<owner>-<kind>). Two embedders in one cluster need two owners; the
	// scaleplane binary's is "scaleplane". An autoscaler given to
	// WithAutoscaler must be built with the same Owner.
	Owner string
	// ClientConfig says how the API server reaches this manager's webhook
	// server for a handler path: a Service in a cluster
	// (webhooks.ServiceClientConfig), a URL out of one. When set, a
	// runnable on every replica creates the owner's two webhook
	// configurations if they are missing and keeps their entries in line
	// with the kinds set up (webhooks.SyncConfigurationsWith). When nil,
	// nothing is written: ship the configurations yourself (Configurations
	// renders them).
	ClientConfig func(path string) admissionregistrationv1.WebhookClientConfig
	// TimeoutSeconds of each webhook call, 1–30. Default 10.
	TimeoutSeconds int32
	// NamespaceSelector and ObjectSelector restrict which objects reach
	// the webhooks; nil matches everything.
	NamespaceSelector, ObjectSelector *metav1.LabelSelector
	// Controllers tunes the controllers; its zero value leaves the
	// manager's controller options (mgr.GetControllerOptions()) in force.
	// Its Owner is set from Owner.
	Controllers controllers.Options
	// OnReview, when set, is told about every review the webhooks answer.
	OnReview webhooks.ReviewHook
	// Admission is who admits the kinds' writes, as the binary's
	// webhook.admission: "webhooks" (or empty), "policies" or "auto". With
	// policies the configuration sync (ClientConfig set) also writes each
	// kind's admission policies, labelled and named for Owner, and deletes
	// the owner's policies no kind wants (docs/design.md, "Admission
	// policies").
	Admission string
}

// Autoscaler is the trigger autoscaler WithAutoscaler takes; package
// controllers/autoscaler's *Autoscaler implements it. An interface keeps
// this package free of the autoscaler's PromQL engine and metric store.
type Autoscaler interface {
	// Sources are the trigger sources the autoscaler builds scalers from;
	// the validating webhook admits a trigger only when its source is
	// there and accepts it.
	Sources() *scaling.Sources
	// SetupKind adds the trigger loop of one kind and registers its
	// controller with mgr.
	SetupKind(mgr manager.Manager, v *profile.Compiled) error
}

// Scaleplane is scaleplane set up on one manager. Build it with New, then
// set up each kind with For(...).Complete() before the manager starts.
type Scaleplane struct {
	mgr     manager.Manager
	opts    Options
	webhook webhooks.ConfigurationOptions

	mu    sync.Mutex
	views []*profile.Compiled
	// sources is the one trigger source set of every kind: an autoscaler
	// belongs to a manager, and so do the triggers admitted for it.
	autoscaler Autoscaler
	// dispatcher serves the kinds' webhooks, made with the first kind.
	dispatcher *webhooks.Dispatcher
}

// New prepares scaleplane on mgr; call it once per manager.
func New(mgr manager.Manager, opts Options) (*Scaleplane, error) {
	if mgr == nil {
		return nil, errors.New("scaleplane: the manager is nil")
	}
	var errs []error
	if opts.Owner == "" {
		errs = append(errs, errors.New("Options.Owner is required: name the embedding operator (a DNS label, e.g. cache-operator); it keeps its webhook configurations apart from other embedders'"))
	}
	for _, msg := range validation.IsDNS1123Label(opts.Owner) {
		if opts.Owner != "" {
			errs = append(errs, fmt.Errorf("Options.Owner %q: %s", opts.Owner, msg))
		}
	}
	if opts.TimeoutSeconds != 0 && (opts.TimeoutSeconds < 1 || opts.TimeoutSeconds > 30) {
		errs = append(errs, fmt.Errorf("Options.TimeoutSeconds %d: must be between 1 and 30 (or 0 for the default, 10)", opts.TimeoutSeconds))
	}
	switch opts.Admission {
	case "", webhooks.AdmissionWebhooks, webhooks.AdmissionPolicies, webhooks.AdmissionAuto:
	default:
		errs = append(errs, fmt.Errorf("Options.Admission %q: must be %s, %s or %s (or empty for %s)", opts.Admission,
			webhooks.AdmissionWebhooks, webhooks.AdmissionPolicies, webhooks.AdmissionAuto, webhooks.AdmissionWebhooks))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("scaleplane: %w", err)
	}
	s := &Scaleplane{mgr: mgr, opts: opts, webhook: webhooks.ConfigurationOptions{
		Owner:             opts.Owner,
		TimeoutSeconds:    opts.TimeoutSeconds,
		NamespaceSelector: opts.NamespaceSelector,
		ObjectSelector:    opts.ObjectSelector,
		Admission:         opts.Admission,
	}}
	s.opts.Controllers.Owner = opts.Owner
	if opts.ClientConfig != nil {
		c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
		if err != nil {
			return nil, fmt.Errorf("scaleplane: build the webhook configuration client: %w", err)
		}
		if err := mgr.Add(&configurationSync{s: s, client: c}); err != nil {
			return nil, fmt.Errorf("scaleplane: add the webhook configuration sync: %w", err)
		}
	}
	return s, nil
}

// Views are the compiled profiles of the kinds set up so far.
func (s *Scaleplane) Views() []*profile.Compiled {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*profile.Compiled(nil), s.views...)
}

// Dispatcher is the webhooks' dispatcher of the manager, which serves the
// kinds set up here; an operator that runs ScaleProfiles beside them
// (controllers/profiles, wired by hand) gives the reconciler this one: a
// webhook server has one dispatcher.
func (s *Scaleplane) Dispatcher() (*webhooks.Dispatcher, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dispatcherLocked()
}

func (s *Scaleplane) dispatcherLocked() (*webhooks.Dispatcher, error) {
	if s.dispatcher == nil {
		d, err := webhooks.NewDispatcher(s.mgr, webhooks.Options{OnReview: s.opts.OnReview})
		if err != nil {
			return nil, err
		}
		s.dispatcher = d
	}
	return s.dispatcher, nil
}

// Configurations renders the owner's webhook configurations for the kinds
// set up so far, for operators that ship them as manifests (Options
// ClientConfig nil). Their entries call the dispatcher's paths
// (webhooks.DispatchPath), as the scaleplane binary's do; configurations
// rendered by an older release, which call the per-kind paths, are still
// served (docs/upgrade.md).
func (s *Scaleplane) Configurations(clientConfig func(path string) admissionregistrationv1.WebhookClientConfig) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	return webhooks.DispatchConfigurations(s.Views(), s.webhook, clientConfig)
}

// For starts the set-up of one kind: obj is an object of it, typed and
// registered in the manager's scheme (or an *unstructured.Unstructured
// carrying its apiVersion and kind).
func (s *Scaleplane) For(obj client.Object) *Builder { return &Builder{s: s, obj: obj} }

// Builder sets up one kind; see Scaleplane.For.
type Builder struct {
	s          *Scaleplane
	obj        client.Object
	spec       *v1alpha1.ScaleProfileSpec
	autoscaler Autoscaler
}

// WithProfile says how scaleplane reads and writes the kind (required).
// Target, ReplicasPath and the status paths may be left out: they come
// from the scheme, the RESTMapper and the CRD's scale subresource.
func (b *Builder) WithProfile(spec v1alpha1.ScaleProfileSpec) *Builder {
	b.spec = &spec
	return b
}

// WithAutoscaler runs the trigger autoscaler for the kind and admits
// triggers against its sources. One autoscaler serves every kind of a
// manager: give each kind the same one.
func (b *Builder) WithAutoscaler(a Autoscaler) *Builder {
	b.autoscaler = a
	return b
}

// Complete resolves the kind, compiles the profile and registers the
// kind's webhooks and controllers (and its autoscaler loop) on the
// manager. Every problem is reported together, saying what to change.
func (b *Builder) Complete() error {
	s := b.s
	if b.spec == nil {
		return errors.New("scaleplane: For(...).WithProfile(spec) is required: the profile says where the kind keeps its scale config")
	}
	// The autoscaler's Scalings name another owner's HPA of a workload as
	// foreign, as the controllers do (C5): both must know the one owner.
	if o, ok := b.autoscaler.(interface{ Owner() string }); ok && o.Owner() != s.opts.Owner {
		return fmt.Errorf("scaleplane: WithAutoscaler: the autoscaler's owner is %q, Options.Owner is %q: build the autoscaler with Owner %q (autoscaler.Options.Owner, MetricsOptions.Owner)",
			o.Owner(), s.opts.Owner, s.opts.Owner)
	}
	view, err := b.compile()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.views {
		if v.GVK().GroupKind() == view.GVK().GroupKind() {
			return fmt.Errorf("scaleplane: %s is set up already; set up each kind once", view.GVK().GroupKind())
		}
	}
	if b.autoscaler != nil {
		if s.autoscaler != nil && s.autoscaler != b.autoscaler {
			return fmt.Errorf("scaleplane: %s: give every kind of a manager the same autoscaler (it owns the manager's trigger sources)", view.GVK().Kind)
		}
		s.autoscaler = b.autoscaler
	}
	var sources *scaling.Sources
	if b.autoscaler != nil {
		sources = b.autoscaler.Sources()
	}
	d, err := s.dispatcherLocked()
	if err != nil {
		return fmt.Errorf("scaleplane: %w", err)
	}
	// Nil sources refuse every trigger at admission, saying that no
	// trigger autoscaler runs for the kind.
	err = SetupKind(s.mgr, view, KindSetup{
		Dispatcher:  d,
		Webhooks:    webhooks.Options{Sources: sources, OnReview: s.opts.OnReview},
		Controllers: s.opts.Controllers,
		Autoscaler:  b.autoscaler,
	})
	if err != nil {
		return fmt.Errorf("scaleplane: %w", err)
	}
	s.views = append(s.views, view)
	return nil
}

// KindSetup says what SetupKind wires for a kind.
type KindSetup struct {
	// Dispatcher serves the kind's webhooks (webhooks.NewDispatcher, one
	// per manager); nil when the manager serves none.
	Dispatcher *webhooks.Dispatcher
	// Webhooks are the options of the kind's webhook handlers.
	Webhooks webhooks.Options
	// Controllers tunes the kind's controller.
	Controllers controllers.Options
	// Autoscaler, when set, runs the kind's trigger loop.
	Autoscaler Autoscaler
}

// SetupKind wires one compiled kind on mgr for the manager's life: its
// webhooks, its controller and, with an autoscaler, its trigger loop.
// It is the one way a kind set up before the manager starts is wired,
// shared by For(...).Complete() and the scaleplane binary's configuration
// file, and each part goes through the path a ScaleProfile's kind takes
// while the manager runs: the kind is activated on the dispatcher
// (webhooks.Dispatcher.SetupKind is Activate plus the kind's per-kind
// paths), its controller is the one controllers.NewKindRuntime builds,
// and its trigger loop the one Autoscaler.StartKind builds.
func SetupKind(mgr manager.Manager, view *profile.Compiled, k KindSetup) error {
	if k.Dispatcher != nil {
		if err := k.Dispatcher.SetupKind(view, k.Webhooks); err != nil {
			return err
		}
	}
	if err := controllers.SetupKind(mgr, view, k.Controllers); err != nil {
		return err
	}
	if k.Autoscaler != nil {
		if err := k.Autoscaler.SetupKind(mgr, view); err != nil {
			return err
		}
	}
	return nil
}

// compile fills the profile's target and /scale paths from what the
// cluster knows and compiles it.
func (b *Builder) compile() (*profile.Compiled, error) {
	s := b.s
	gvk, err := apiutil.GVKForObject(b.obj, s.mgr.GetScheme())
	if err != nil {
		return nil, fmt.Errorf("scaleplane: the kind of %T: %w; add its types to the manager's scheme (AddToScheme)", b.obj, err)
	}
	spec := *b.spec.DeepCopy()
	var errs []error
	t := &spec.Target
	switch {
	case t.APIVersion == "" && t.Kind == "":
		t.APIVersion, t.Kind = gvk.GroupVersion().String(), gvk.Kind
	case t.APIVersion != gvk.GroupVersion().String() || t.Kind != gvk.Kind:
		errs = append(errs, fmt.Errorf("profile target %s %s is not the object's kind %s; leave target out", t.APIVersion, t.Kind, gvk))
	}
	mapping, err := s.mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("scaleplane: the API server does not serve %s: %w; install its CRD before the operator starts", gvk, err)
	}
	switch {
	case t.Resource == "":
		t.Resource = mapping.Resource.Resource
	case t.Resource != mapping.Resource.Resource:
		errs = append(errs, fmt.Errorf("profile target resource %q: the API server calls %s %q; leave resource out", t.Resource, gvk.Kind, mapping.Resource.Resource))
	}
	if spec.ReplicasPath == "" || spec.Status.ReplicasPath == "" || spec.Status.SelectorPath == "" {
		if err := b.scalePaths(mapping.Resource, &spec); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("scaleplane: %s: %w", gvk.Kind, err)
	}
	view, err := profile.Compile(spec)
	if err != nil {
		return nil, fmt.Errorf("scaleplane: %w", err)
	}
	// The served schema's limits (M7, S2), as the binary reads them: a
	// library type's configs are held to them like any other. A kind
	// without a readable CRD (an aggregated API) keeps no limits.
	if crd, err := b.readCRD(mapping.Resource); err == nil {
		if view, err = view.WithCRD(crd); err != nil {
			return nil, fmt.Errorf("scaleplane: %w", err)
		}
	}
	return view, nil
}

// readCRD reads the kind's CRD, typed.
func (b *Builder) readCRD(gvr schema.GroupVersionResource) (*apiextensionsv1.CustomResourceDefinition, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(crdGVK)
	if err := b.s.mgr.GetAPIReader().Get(context.Background(), client.ObjectKey{Name: gvr.Resource + "." + gvr.Group}, u); err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		return nil, err
	}
	return crd, nil
}

// crdGVK is read unstructured, so the manager's scheme need not know
// apiextensions.
var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// scalePaths fills the paths the profile left out from the CRD's scale
// subresource of the served version. A kind without a CRD (an aggregated
// API) or without a scale subresource keeps what the profile says, and
// package profile's defaults apply.
func (b *Builder) scalePaths(gvr schema.GroupVersionResource, spec *v1alpha1.ScaleProfileSpec) error {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	name := gvr.Resource + "." + gvr.Group
	if err := b.s.mgr.GetAPIReader().Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
		return fmt.Errorf("read CRD %s for its /scale paths: %w; set replicasPath, status.replicasPath and status.selectorPath in the profile, or let the operator read CRDs", name, err)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, raw := range versions {
		v, ok := raw.(map[string]any)
		if !ok || v["name"] != gvr.Version {
			continue
		}
		scale, found, _ := unstructured.NestedMap(v, "subresources", "scale")
		if !found {
			return fmt.Errorf("CRD %s version %s has no scale subresource; add one (kubebuilder: +kubebuilder:subresource:scale) so that kubectl scale and HPAs reach the kind", name, gvr.Version)
		}
		fill := func(dst *string, key string) {
			if s, _ := scale[key].(string); *dst == "" && s != "" {
				*dst = s
			}
		}
		fill(&spec.ReplicasPath, "specReplicasPath")
		fill(&spec.Status.ReplicasPath, "statusReplicasPath")
		fill(&spec.Status.SelectorPath, "labelSelectorPath")
		return nil
	}
	return fmt.Errorf("CRD %s does not serve version %s", name, gvr.Version)
}

// configurationSync keeps the owner's webhook configurations in line with
// the kinds set up, once at start, on every replica.
type configurationSync struct {
	s      *Scaleplane
	client client.Client
}

func (c *configurationSync) Start(ctx context.Context) error {
	sync := &webhooks.ConfigurationSync{
		Client:       c.client,
		Views:        c.s.Views(),
		Webhook:      c.s.webhook,
		ClientConfig: c.s.opts.ClientConfig,
		Dispatch:     true,
	}
	return sync.Start(ctx)
}

// NeedLeaderElection is false: every replica serves admission.
func (*configurationSync) NeedLeaderElection() bool { return false }
