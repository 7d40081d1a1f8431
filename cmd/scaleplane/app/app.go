package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	scaleplane "github.com/scaleplane/scaleplane"
	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/certs"
	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/controllers/profiles"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/promql"
	"github.com/scaleplane/scaleplane/scaling"
	"github.com/scaleplane/scaleplane/webhooks"
)

// LeaderElectionID names the lease the default owner's replicas compete
// for (LeaderElectionIDFor(v1alpha1.DefaultOwner)).
const LeaderElectionID = v1alpha1.DefaultOwner + v1alpha1.OwnerEntrySuffix

// LeaderElectionIDFor names the lease of owner's replicas,
// <owner>.scaleplane.io: binaries with different owners in one namespace
// each elect their own leader, as each runs its own kinds.
func LeaderElectionIDFor(owner string) string { return owner + v1alpha1.OwnerEntrySuffix }

// App is an assembled, not yet running, scaleplane manager.
type App struct {
	// Manager is the controller-runtime manager; callers may add runnables
	// before Run.
	Manager manager.Manager
	// Views are the compiled profiles.
	Views []*profile.Compiled
	// Sources are the trigger sources of this App's autoscaler, which its
	// validating webhook admits triggers against; callers may register
	// their own before Run. Every App has its own.
	Sources *scaling.Sources

	opts    Options
	direct  client.Client
	rotator *certs.Rotator
	synced  atomic.Bool
	servers *servers
	// profiles wires the ScaleProfile reconciler, set up in Run once the
	// API server says whether it serves ScaleProfiles.
	profiles profiles.Options
}

// New builds the manager and registers everything on it. It reads the
// profiled kinds' CRDs, whose schemas the handlers need (withSchemas);
// nothing else talks to the API server until Run.
func New(opts Options) (*App, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("invalid options: %w", err)
	}
	views, err := profile.CompileAll(opts.Config.Profiles)
	if err != nil {
		return nil, fmt.Errorf("compile profiles: %w", err)
	}
	if views, err = withSchemas(opts.RestConfig, views); err != nil {
		return nil, fmt.Errorf("read the profiled kinds' schemas: %w", err)
	}
	a := &App{Views: views, opts: opts}
	scheme := certs.NewScheme()
	// ScaleProfiles are read and their status written through the
	// manager; CRDs are read for live kinds' schemas (withSchema).
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("build scheme: %w", err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("build scheme: %w", err)
	}

	mopts := ctrl.Options{
		Scheme: scheme,
		// scaleplane serves metrics and probes itself, within the limits
		// of Config.Servers (servers.go); controller-runtime's servers
		// cannot be bounded.
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              LeaderElectionIDFor(opts.Config.Webhook.Owner),
		LeaderElectionNamespace:       opts.Namespace,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &opts.GracefulShutdownTimeout,
		// Workloads are unstructured; caching them keeps webhook and
		// controller reads off the API server.
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Cache:  cacheOptions(),
	}
	if !opts.NoWebhookServer {
		if mopts.WebhookServer, err = newWebhookServer(opts.Config); err != nil {
			return nil, err
		}
	}
	crm, err := ctrl.NewManager(opts.RestConfig, mopts)
	if err != nil {
		return nil, fmt.Errorf("build manager: %w", err)
	}
	// Every package below registers its health checks and metrics-server
	// handlers on scaleplane's own servers through it.
	a.servers = newServers()
	mgr := servedManager{Manager: crm, s: a.servers}
	a.Manager = mgr
	if a.direct, err = client.New(opts.RestConfig, client.Options{Scheme: scheme, Mapper: mgr.GetRESTMapper()}); err != nil {
		return nil, fmt.Errorf("build client: %w", err)
	}

	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("informers", a.cachesSynced); err != nil {
		return nil, fmt.Errorf("add readiness check: %w", err)
	}
	// Every replica serves webhooks, so every replica must turn Ready: a
	// plain RunnableFunc would wait for the leader lease, and a replica that
	// is not the leader would never be an endpoint of the webhook Service.
	if err := mgr.Add(everyReplica(a.waitForCaches)); err != nil {
		return nil, fmt.Errorf("add cache watcher: %w", err)
	}

	pipe, err := newTriggerPipeline(opts)
	if err != nil {
		return nil, fmt.Errorf("set up autoscaler: %w", err)
	}
	a.Sources = pipe.sources
	var dispatcher profiles.Dispatcher = noDispatcher{}
	kind := scaleplane.KindSetup{Controllers: controllers.Options{Owner: opts.Config.Webhook.Owner, MaxConcurrentReconciles: 4, SkipNameValidation: opts.SkipControllerNameValidation}}
	if !opts.NoWebhookServer {
		if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
			return nil, fmt.Errorf("add webhook readiness check: %w", err)
		}
		if opts.CertMode != CertFiles {
			if a.rotator, err = certs.New(opts.RestConfig, a.certsOptions()); err != nil {
				return nil, err
			}
			if err := a.rotator.SetupWithManager(mgr); err != nil {
				return nil, err
			}
		}
		wopts := webhooks.Options{Sources: pipe.sources, OnReview: opts.OnAdmission}
		d, err := webhooks.NewDispatcher(mgr, wopts)
		if err != nil {
			return nil, err
		}
		kind.Webhooks, kind.Dispatcher, dispatcher = &wopts, d, d
	}
	// The autoscaler's manager-wide part; its kinds are wired below.
	as, err := setupAutoscaler(mgr, opts, nil, pipe)
	if err != nil {
		return nil, fmt.Errorf("set up autoscaler: %w", err)
	}
	kind.Autoscaler = as
	// The configuration file's kinds are wired as the library builder
	// wires an embedder's (scaleplane.SetupKind): the dispatcher serves
	// their webhooks as it serves ScaleProfiles' kinds, and their
	// per-kind paths stay served only for entries an older release wrote
	// (docs/upgrade.md); their controllers and trigger loops are built as
	// a ScaleProfile's kind's are.
	for _, v := range views {
		if err := scaleplane.SetupKind(mgr, v, kind); err != nil {
			return nil, fmt.Errorf("set up %s: %w", v.GVK().Kind, err)
		}
	}
	popts := profiles.Options{
		Owner:       opts.Config.Webhook.Owner,
		Dispatcher:  dispatcher,
		Controllers: controllers.Options{MaxConcurrentReconciles: 4, SkipNameValidation: opts.SkipControllerNameValidation},
		Static:      views,
		// ScaleProfiles' kinds get the trigger autoscaler too: the
		// webhooks admit their triggers with the same sources.
		StartAutoscaler: func(ctx context.Context, v *profile.Compiled) (func(context.Context) error, error) {
			rk, err := as.StartKind(ctx, v)
			if err != nil {
				return nil, err
			}
			return rk.Stop, nil
		},
	}
	switch {
	case opts.NoWebhookServer:
	case opts.GitOps:
		popts.Missing = func(ctx context.Context, active []*profile.Compiled) (map[schema.GroupVersionResource][]string, error) {
			return webhooks.MissingDispatchEntries(ctx, a.direct, active, webhooks.ConfigurationOptionsFromConfig(opts.Config.Webhook))
		}
	case *opts.ManageWebhookConfigurations:
		popts.Resync = func(ctx context.Context, active []*profile.Compiled) error {
			return webhooks.SyncDispatchConfigurations(ctx, a.direct, append(append([]*profile.Compiled(nil), a.Views...), active...), webhooks.ConfigurationOptionsFromConfig(opts.Config.Webhook), a.clientConfig)
		}
	}
	a.profiles = popts
	return a, nil
}

// setupScaleProfiles runs the ScaleProfile reconciler when the API server
// serves ScaleProfiles. Without their CRD (an installation that predates
// it, a test control plane) its watch would never sync and would stop the
// manager; the configuration file's kinds run as before.
func (a *App) setupScaleProfiles() error {
	gvk := v1alpha1.GroupVersion.WithKind("ScaleProfile")
	if _, err := a.Manager.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if !apimeta.IsNoMatchError(err) {
			return fmt.Errorf("look up ScaleProfiles: %w", err)
		}
		ctrl.Log.WithName("scaleplane").Info("ScaleProfiles are not served: only the configuration file's profiles run; install config/crd (the release manifest or the chart do) to apply profiles with kubectl")
		return nil
	}
	if _, err := profiles.SetupWithManager(a.Manager, a.profiles); err != nil {
		return fmt.Errorf("set up ScaleProfiles: %w", err)
	}
	return nil
}

// noDispatcher stands in for the webhooks' dispatcher when the process
// serves no webhooks: ScaleProfiles still run their kinds' controllers.
type noDispatcher struct{}

func (noDispatcher) Activate(*profile.Compiled)             {}
func (noDispatcher) Deactivate(schema.GroupVersionResource) {}

func (a *App) certsOptions() certs.Options { return certsOptionsFor(a.opts) }

// certsOptionsFor is what package certs needs of opts: the Secret, the
// Service's names and the configurations to inject or annotate.
func certsOptionsFor(opts Options) certs.Options {
	wc := opts.Config.Webhook
	o := certs.Options{
		Mode:                            certs.Mode(opts.CertMode),
		SecretNamespace:                 opts.Namespace,
		SecretName:                      opts.SecretName,
		DNSNames:                        certs.ServiceDNSNames(opts.ServiceName, opts.Namespace),
		MutatingWebhookConfigurations:   []string{wc.MutatingConfigurationName},
		ValidatingWebhookConfigurations: []string{wc.ValidatingConfigurationName},
		// Only this owner's entries: another's in the same configuration
		// has its own CA.
		OwnsEntry: func(name string) bool { return webhooks.OwnsEntry(webhooks.ConfigurationOptionsFromConfig(wc), name) },
		CertDir:   wc.CertDir,
	}
	o.CertManager.IssuerRef = opts.CertManagerIssuer
	for _, ip := range opts.WebhookIPs {
		if parsed := net.ParseIP(ip); parsed != nil {
			o.IPAddresses = append(o.IPAddresses, parsed)
		}
	}
	return o
}

// everyReplica is a runnable that runs on every replica, leader or not.
type everyReplica func(context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (everyReplica) NeedLeaderElection() bool { return false }

func (a *App) waitForCaches(ctx context.Context) error {
	if a.Manager.GetCache().WaitForCacheSync(ctx) {
		a.synced.Store(true)
	}
	<-ctx.Done()
	return nil
}

func (a *App) cachesSynced(*http.Request) error {
	if !a.synced.Load() {
		return errors.New("informer caches have not synced yet")
	}
	return nil
}

// Run binds the metrics and probe servers, prepares what the webhook
// server needs before it may start (its namespace, the webhook
// configurations, the serving certificate) and then runs the manager until
// ctx ends.
func (a *App) Run(ctx context.Context) error {
	if err := a.preflight(); err != nil {
		return err
	}
	if err := a.checkKindsServed(); err != nil {
		return err
	}
	if err := a.setupScaleProfiles(); err != nil {
		return err
	}
	// Bound before anything is written, so that a port in use fails the
	// start while nothing needs undoing.
	closeServers, err := a.serve()
	if err != nil {
		return err
	}
	defer closeServers()
	if !a.opts.NoWebhookServer {
		if err := a.prepareWebhooks(ctx); err != nil {
			return err
		}
	}
	return a.Manager.Start(ctx)
}

// checkKindsServed fails fast, naming the CRD to install, when a profile
// names a kind the API server does not serve; otherwise the controllers would
// wait for a watch that never starts.
func (a *App) checkKindsServed() error {
	var errs []error
	for _, v := range a.Views {
		gvk := v.GVK()
		m, err := a.Manager.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("profile %s: the API server does not serve %s (%s); install its CRD or remove the profile: %w", gvk.Kind, gvk.GroupVersion(), v.GVR().Resource, err))
		case m.Resource.Resource != v.GVR().Resource:
			errs = append(errs, fmt.Errorf("profile %s: resource is %q but the API server calls it %q; set resource: %s", gvk.Kind, v.GVR().Resource, m.Resource.Resource, m.Resource.Resource))
		}
	}
	return errors.Join(errs...)
}

func (a *App) prepareWebhooks(ctx context.Context) (err error) {
	if a.opts.CertMode == CertCertManager {
		// Before anything is written: without cert-manager nothing below
		// can succeed, and the error says what to install.
		if err := certs.CheckCertManager(a.direct); err != nil {
			return fmt.Errorf("cert-manager mode: %w", err)
		}
	}
	if a.opts.GitOps {
		return a.prepareGitOps(ctx)
	}
	if a.opts.CertMode != CertFiles {
		// Out of a cluster (dev) the namespace may not exist yet; in one, it
		// does and scaleplane's role may not create namespaces at all.
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.opts.Namespace}}
		if err := a.direct.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.IsForbidden(err) {
			return fmt.Errorf("create namespace %s: %w", a.opts.Namespace, err)
		}
	}
	if *a.opts.ManageWebhookConfigurations {
		var created []client.Object
		created, err = a.ensureWebhookConfigurations(ctx)
		// Configurations this start created fail closed (failurePolicy
		// Fail): left behind by a start that cannot serve them, they would
		// refuse every write of the profiled kinds. Nothing half-applied
		// stays.
		defer func() {
			if err != nil {
				a.deleteCreated(created)
			}
		}()
		if err != nil {
			return err
		}
	}
	switch a.opts.CertMode {
	case CertCertManager:
		if err := certs.EnsureCertManager(ctx, a.direct, a.certsOptions()); err != nil {
			return fmt.Errorf("cert-manager mode: %w", err)
		}
	case CertFiles:
		return nil
	}
	// controller-runtime's webhook server starts before other runnables and
	// fails without a key pair, so the first one must exist before Start.
	if err := a.rotator.Bootstrap(ctx); err != nil {
		return fmt.Errorf("webhook certificate: %w", err)
	}
	return nil
}

// ensureWebhookConfigurations creates scaleplane's webhook configurations
// when they are missing and brings their rules in line with the profiles.
// It returns the configurations it created.
func (a *App) ensureWebhookConfigurations(ctx context.Context) (created []client.Object, err error) {
	wc := a.opts.Config.Webhook
	views, err := a.withLiveProfiles(ctx)
	if err != nil {
		return nil, err
	}
	mutating, validating := webhooks.DispatchConfigurations(views, webhooks.ConfigurationOptionsFromConfig(wc), a.clientConfig)
	for _, obj := range []client.Object{mutating, validating} {
		switch err := a.direct.Create(ctx, obj); {
		case err == nil:
			created = append(created, obj)
		case !apierrors.IsAlreadyExists(err):
			return created, fmt.Errorf("create %T %s: %w", obj, obj.GetName(), err)
		}
	}
	// The release manifest and the chart ship both configurations without
	// entries: new entries call this process's Service (or URL).
	if err := webhooks.SyncDispatchConfigurations(ctx, a.direct, views, webhooks.ConfigurationOptionsFromConfig(wc), a.clientConfig); err != nil {
		return created, fmt.Errorf("sync webhook configurations: %w", err)
	}
	if a.opts.WebhookURL != "" {
		return created, a.pointWebhooksAtURL(ctx)
	}
	return created, nil
}

// withLiveProfiles is the configuration file's kinds and those of the
// active ScaleProfiles. Every replica syncs the entries at start, before
// the ScaleProfile reconciler runs: without the live kinds a start would
// remove their entries, and their objects would be admitted unjudged until
// the leader resyncs. Where ScaleProfiles are not served (their CRD is not
// installed) only the file's kinds are.
func (a *App) withLiveProfiles(ctx context.Context) ([]*profile.Compiled, error) {
	views := append([]*profile.Compiled(nil), a.Views...)
	var list v1alpha1.ScaleProfileList
	if err := a.direct.List(ctx, &list); err != nil {
		if apimeta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return views, nil
		}
		return nil, fmt.Errorf("list ScaleProfiles: %w", err)
	}
	static := make(map[schema.GroupKind]bool, len(a.Views))
	for _, v := range a.Views {
		static[v.GVK().GroupKind()] = true
	}
	// Only this owner's: another owner's kinds get no entry of ours.
	list.Items = profiles.Owned(a.opts.Config.Webhook.Owner, list.Items)
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		if s := profiles.EvaluateWith(p, list.Items, a.Manager.GetRESTMapper(), static); s.Active() {
			views = append(views, s.View)
		}
	}
	return views, nil
}

// deleteCreated removes webhook configurations a failed start created. It
// runs after ctx may have ended, so it has a deadline of its own.
func (a *App) deleteCreated(objs []client.Object) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, obj := range objs {
		if err := a.direct.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			ctrl.Log.WithName("scaleplane").Error(err, "remove a webhook configuration left by a failed start; delete it by hand", "name", obj.GetName())
		}
	}
}

// pointWebhooksAtURL makes every webhook of the existing configurations call
// this process's address. Out of a cluster the address changes with every
// start (`scaleplane dev --keep` reuses etcd data with a new port), and a
// stale URL would fail every admission. caBundle is left to the rotator.
func (a *App) pointWebhooksAtURL(ctx context.Context) error {
	wc := a.opts.Config.Webhook
	repoint := func(cc *admissionregistrationv1.WebhookClientConfig) bool {
		path := ""
		switch {
		case cc.Service != nil && cc.Service.Path != nil:
			path = *cc.Service.Path
		case cc.URL != nil:
			if u, err := url.Parse(*cc.URL); err == nil {
				path = u.Path
			}
		}
		want := a.opts.WebhookURL + path
		if cc.URL != nil && *cc.URL == want && cc.Service == nil {
			return false
		}
		cc.URL, cc.Service = ptr.To(want), nil
		return true
	}
	type target struct {
		obj     client.Object
		configs func() []*admissionregistrationv1.WebhookClientConfig
	}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: wc.MutatingConfigurationName}}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: wc.ValidatingConfigurationName}}
	targets := []target{
		// Only this owner's entries: another's in the same configuration
		// call its own server.
		{m, func() (out []*admissionregistrationv1.WebhookClientConfig) {
			for i := range m.Webhooks {
				if webhooks.OwnsEntry(webhooks.ConfigurationOptionsFromConfig(wc), m.Webhooks[i].Name) {
					out = append(out, &m.Webhooks[i].ClientConfig)
				}
			}
			return out
		}},
		{v, func() (out []*admissionregistrationv1.WebhookClientConfig) {
			for i := range v.Webhooks {
				if webhooks.OwnsEntry(webhooks.ConfigurationOptionsFromConfig(wc), v.Webhooks[i].Name) {
					out = append(out, &v.Webhooks[i].ClientConfig)
				}
			}
			return out
		}},
	}
	for _, t := range targets {
		name := t.obj.GetName()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := a.direct.Get(ctx, client.ObjectKey{Name: name}, t.obj); err != nil {
				return err
			}
			changed := false
			for _, cc := range t.configs() {
				changed = repoint(cc) || changed
			}
			if !changed {
				return nil
			}
			return a.direct.Update(ctx, t.obj)
		})
		if err != nil {
			return fmt.Errorf("point %s at %s: %w", name, a.opts.WebhookURL, err)
		}
	}
	return nil
}

func (a *App) clientConfig(path string) admissionregistrationv1.WebhookClientConfig {
	return clientConfigFor(a.opts)(path)
}

// clientConfigFor is how opts' webhook entries reach the server: the URL
// when one is set, else the Service on port 443.
func clientConfigFor(opts Options) func(path string) admissionregistrationv1.WebhookClientConfig {
	return func(path string) admissionregistrationv1.WebhookClientConfig {
		if opts.WebhookURL != "" {
			return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(opts.WebhookURL + path)}
		}
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Namespace: opts.Namespace,
			Name:      opts.ServiceName,
			Path:      ptr.To(path),
			Port:      ptr.To(int32(443)),
		}}
	}
}

// Scheme is the scheme the manager uses.
func (a *App) Scheme() *runtime.Scheme { return a.Manager.GetScheme() }

// cacheOptions trims what the informers keep. The scraper's Pod informer
// is cluster-wide: of each pod only what discovery reads stays
// (docs/production.md, Sizing). No reader of the cache uses managedFields,
// which were more than half of a cached workload's bytes (about 5.6 of
// 9.8 KB for a RackedCluster); an update sent without them leaves the
// server's untouched.
func cacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: promql.TrimPod}},
	}
}
