package certs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
)

// Timing of the control loop. maxWait bounds the time between two full
// checks even when no watch event arrives (a watch can silently stall).
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 30 * time.Second
	maxWait    = time.Hour
)

// ReadyzName is the name to register ReadyCheck under.
const ReadyzName = "webhook-certs"

// NewScheme returns a scheme with the Kubernetes built-in types and
// cert-manager's certmanager/v1 types: everything this package reads or
// writes.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(cmapi.AddToScheme(s))
	return s
}

// RBAC the Rotator needs (namespace-scoped Secrets would do; kubebuilder
// markers cannot express that, so the manifests may narrow it):
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=cert-manager.io,resources=issuers;certificates,verbs=get;create

// Rotator keeps the webhook's key pair in place: in self-signed mode it
// creates and renews the Secret and injects the CA bundle; in both modes it
// mirrors the Secret into Options.CertDir and reports readiness. It is a
// manager.Runnable that runs on every replica (no leader election): it reads
// the Secret directly from the API server rather than through the manager's
// cache, so a manager need not cache Secrets cluster-wide.
type Rotator struct {
	opts   Options
	client client.WithWatch
	now    func() time.Time

	kick chan struct{}

	mu       sync.Mutex
	readyErr error
	readyCh  chan struct{}
}

// The Rotator plugs into a manager as a runnable on every replica and as a
// readiness check.
var (
	_ manager.Runnable               = (*Rotator)(nil)
	_ manager.LeaderElectionRunnable = (*Rotator)(nil)
	_ healthz.Checker                = (*Rotator)(nil).ReadyCheck
)

// New returns a Rotator talking to the API server at cfg.
func New(cfg *rest.Config, o Options) (*Rotator, error) {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: NewScheme()})
	if err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	return NewWithClient(c, o)
}

// NewWithClient returns a Rotator using c, which must not be a cached client
// (reads must see the latest Secret to keep optimistic concurrency cheap).
func NewWithClient(c client.WithWatch, o Options) (*Rotator, error) {
	o = o.Default()
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("invalid certs options: %w", err)
	}
	return &Rotator{
		opts:     o,
		client:   c,
		now:      time.Now,
		kick:     make(chan struct{}, 1),
		readyErr: errors.New("webhook certificate not in place yet"),
		readyCh:  make(chan struct{}),
	}, nil
}

// Options returns the defaulted options in use.
func (r *Rotator) Options() Options { return r.opts }

// SetupWithManager adds the Rotator to mgr and registers ReadyCheck as a
// readiness check, so the pod receives admission traffic only once its
// certificate is in place.
func (r *Rotator) SetupWithManager(mgr manager.Manager) error {
	if err := mgr.Add(r); err != nil {
		return fmt.Errorf("add certs rotator: %w", err)
	}
	if err := mgr.AddReadyzCheck(ReadyzName, r.ReadyCheck); err != nil {
		return fmt.Errorf("add certs readiness check: %w", err)
	}
	return nil
}

// NeedLeaderElection is false: every replica serves webhooks and needs the
// files; concurrent writers are resolved by resourceVersion.
func (r *Rotator) NeedLeaderElection() bool { return false }

// Start runs until ctx is done, re-checking on every change of the Secret or
// of a named webhook configuration and when the next renewal is due.
func (r *Rotator) Start(ctx context.Context) error {
	return r.run(ctx, false)
}

// Bootstrap blocks until the certificate is in place (files written, CA
// injected in self-signed mode) or ctx ends. Call it before starting a
// manager that serves webhooks: controller-runtime's webhook server starts
// before any other runnable and fails if CertDir holds no key pair.
func (r *Rotator) Bootstrap(ctx context.Context) error {
	if err := r.run(ctx, true); err != nil {
		return err
	}
	select {
	case <-r.readyCh:
		return nil
	default:
		return fmt.Errorf("webhook certificate not in place: %w", errors.Join(ctx.Err(), r.ReadyCheck(nil)))
	}
}

// Ready is closed once the certificate is first in place.
func (r *Rotator) Ready() <-chan struct{} { return r.readyCh }

// ReadyCheck is a healthz.Checker: it fails until the certificate is in
// place, with a message saying what is missing.
func (r *Rotator) ReadyCheck(_ *http.Request) error {
	if r.opts.MountedSecret {
		return checkDir(r.opts, r.now())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.readyErr
}

func (r *Rotator) setReady(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.readyErr = err
	if err == nil {
		select {
		case <-r.readyCh:
		default:
			close(r.readyCh)
		}
	}
}

func (r *Rotator) poke() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *Rotator) run(ctx context.Context, untilReady bool) error {
	log := logf.FromContext(ctx).WithName("certs").WithValues("secret", r.opts.SecretNamespace+"/"+r.opts.SecretName, "mode", r.opts.Mode)
	ctx = logf.IntoContext(ctx, log)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { r.watch(ctx, &corev1.SecretList{}, r.opts.SecretNamespace, r.opts.SecretName) })
	if r.opts.Mode == ModeSelfSigned {
		for _, name := range r.opts.MutatingWebhookConfigurations {
			wg.Go(func() { r.watch(ctx, &admissionregistrationv1.MutatingWebhookConfigurationList{}, "", name) })
		}
		for _, name := range r.opts.ValidatingWebhookConfigurations {
			wg.Go(func() { r.watch(ctx, &admissionregistrationv1.ValidatingWebhookConfigurationList{}, "", name) })
		}
	}

	timer := time.NewTimer(0)
	defer timer.Stop()
	backoff := minBackoff
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.kick:
		case <-timer.C:
		}
		wait, err := r.reconcile(ctx)
		if err != nil {
			log.Error(err, "reconcile webhook certificate", "retryIn", backoff)
			wait = backoff
			backoff = min(2*backoff, maxBackoff)
		} else {
			backoff = minBackoff
		}
		if untilReady {
			select {
			case <-r.readyCh:
				return nil
			default:
			}
		}
		timer.Reset(min(max(wait, 0), maxWait))
	}
}

// watch pokes the loop on every event of one named object, re-establishing
// the watch when it ends. The loop re-reads everything on a poke, so events
// carry no data here.
func (r *Rotator) watch(ctx context.Context, list client.ObjectList, namespace, name string) {
	backoff := minBackoff
	for ctx.Err() == nil {
		w, err := r.client.Watch(ctx, list, client.InNamespace(namespace), client.MatchingFields{"metadata.name": name})
		if err == nil {
			backoff = minBackoff
			// A new watch starts with the current state, but a change
			// between the old watch ending and this one starting is only
			// seen by looking again.
			r.poke()
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					break
				}
				r.poke()
			}
			w.Stop()
		} else {
			logf.FromContext(ctx).V(1).Info("watch failed", "name", name, "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// reconcile brings Secret, caBundle and files in line once, returning how
// long until the next renewal is due.
func (r *Rotator) reconcile(ctx context.Context) (time.Duration, error) {
	log := logf.FromContext(ctx)
	now := r.now()
	key := client.ObjectKey{Namespace: r.opts.SecretNamespace, Name: r.opts.SecretName}
	secret := &corev1.Secret{}
	err := r.client.Get(ctx, key, secret)
	switch {
	case apierrors.IsNotFound(err) && r.opts.Mode == ModeCertManager:
		// Say why nothing comes when cert-manager is not there at all,
		// rather than waiting silently for a Secret that never appears.
		if cerr := CheckCertManager(r.client); errors.Is(cerr, ErrCertManagerNotInstalled) {
			r.setReady(fmt.Errorf("secret %s not found: %w", key, cerr))
			return maxWait, nil
		}
		r.setReady(fmt.Errorf("secret %s not found: waiting for cert-manager to issue the Certificate that writes it", key))
		return maxWait, nil
	case apierrors.IsNotFound(err):
		return 0, r.create(ctx, log, now)
	case err != nil:
		return 0, fmt.Errorf("get secret %s: %w", key, err)
	}

	wait := maxWait
	if r.opts.Mode == ModeSelfSigned {
		m, perr := parseMaterial(secret.Data, secret.Annotations[CAStagedAtAnnotation])
		d := decide(now, m, perr, r.opts)
		if d.step != stepNone {
			next, err := apply(now, d, m, r.opts)
			if err != nil {
				return 0, err
			}
			if err := r.update(ctx, secret, next); err != nil {
				if apierrors.IsConflict(err) {
					// Another replica wrote first; its content wins.
					log.V(1).Info("secret changed concurrently, re-reading")
					return 0, nil
				}
				return 0, err
			}
			log.Info("renewed webhook certificate", "step", d.step, "reason", d.reason, "revision", secret.Annotations[RevisionAnnotation])
			d = decide(now, next, nil, r.opts)
		}
		wait = d.next.Sub(now)
		rev, _ := strconv.ParseInt(secret.Annotations[RevisionAnnotation], 10, 64)
		missing, err := inject(ctx, r.client, injection{bundle: secret.Data[CAKey], uid: secret.UID, revision: rev, owns: r.opts.OwnsEntry},
			r.opts.MutatingWebhookConfigurations, r.opts.ValidatingWebhookConfigurations)
		if err != nil {
			if apierrors.IsConflict(err) {
				return 0, nil
			}
			return 0, err
		}
		if len(missing) > 0 {
			log.V(1).Info("webhook configurations not found yet; injecting when they appear", "missing", missing)
		}
	}

	serving, err := parseKeyPair(secret.Data[CertKey], secret.Data[KeyKey])
	if err != nil {
		r.setReady(fmt.Errorf("secret %s holds no usable key pair: %w", key, err))
		return 0, err
	}
	observeExpiration(serving.cert, secret.Data[CAKey])
	if !now.Before(serving.cert.NotAfter) {
		r.setReady(fmt.Errorf("secret %s holds a certificate that expired at %s", key, serving.cert.NotAfter.Format(time.RFC3339)))
	}
	if r.opts.CertDir != "" && !r.opts.MountedSecret {
		files := map[string][]byte{r.opts.CertName: secret.Data[CertKey], r.opts.KeyName: secret.Data[KeyKey]}
		if ca := secret.Data[CAKey]; len(ca) > 0 {
			files[r.opts.CAName] = ca
		}
		changed, err := writeDir(r.opts.CertDir, files)
		if err != nil {
			r.setReady(fmt.Errorf("write certificate files: %w", err))
			return 0, err
		}
		if changed {
			log.Info("wrote webhook certificate files", "dir", r.opts.CertDir, "notAfter", serving.cert.NotAfter.Format(time.RFC3339))
		}
	}
	if now.Before(serving.cert.NotAfter) {
		r.setReady(nil)
	}
	return wait, nil
}

// create writes a first Secret. Of several replicas starting together
// exactly one create succeeds; the others get AlreadyExists and adopt it.
func (r *Rotator) create(ctx context.Context, log logr.Logger, now time.Time) error {
	m, err := apply(now, decision{step: stepGenerate}, material{}, r.opts)
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   r.opts.SecretNamespace,
			Name:        r.opts.SecretName,
			Labels:      map[string]string{LabelManagedBy: ManagedByValue},
			Annotations: map[string]string{RevisionAnnotation: "1"},
		},
		Type: corev1.SecretTypeTLS,
		Data: m.data(),
	}
	if err := r.client.Create(ctx, secret); err != nil {
		if apierrors.IsAlreadyExists(err) {
			log.V(1).Info("secret created concurrently by another replica")
			r.poke()
			return nil
		}
		return fmt.Errorf("create secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	log.Info("created webhook certificate", "notAfter", m.serving.cert.NotAfter.Format(time.RFC3339))
	r.poke()
	return nil
}

// update writes m into secret at its resourceVersion, so a concurrent
// writer's change makes this fail with a conflict rather than be lost.
func (r *Rotator) update(ctx context.Context, secret *corev1.Secret, m material) error {
	rev, _ := strconv.ParseInt(secret.Annotations[RevisionAnnotation], 10, 64)
	if secret.Annotations == nil {
		secret.Annotations = map[string]string{}
	}
	secret.Annotations[RevisionAnnotation] = strconv.FormatInt(rev+1, 10)
	if m.stagedAt.IsZero() {
		delete(secret.Annotations, CAStagedAtAnnotation)
	} else {
		secret.Annotations[CAStagedAtAnnotation] = m.stagedAt.UTC().Format(time.RFC3339)
	}
	secret.Data = m.data()
	if err := r.client.Update(ctx, secret); err != nil {
		return fmt.Errorf("update secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return nil
}

// checkDir is readiness for a kubelet-mounted Secret: a valid, unexpired
// key pair must be present in CertDir.
func checkDir(o Options, now time.Time) error {
	cert, err := readFile(filepath.Join(o.CertDir, o.CertName))
	if err != nil {
		return err
	}
	key, err := readFile(filepath.Join(o.CertDir, o.KeyName))
	if err != nil {
		return err
	}
	pair, err := parseKeyPair(cert, key)
	if err != nil {
		return fmt.Errorf("certificate files in %s: %w", o.CertDir, err)
	}
	if !now.Before(pair.cert.NotAfter) {
		return fmt.Errorf("certificate in %s expired at %s", o.CertDir, pair.cert.NotAfter.Format(time.RFC3339))
	}
	return nil
}
