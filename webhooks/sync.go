package webhooks

import (
	"context"
	"errors"
	"fmt"
	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"net/url"
	"path"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
)

// SyncConfigurations brings the two webhook configurations named in wc in
// line with views, so that adding or removing a profile needs no hand edit
// of the cluster's webhook configurations. It touches only what wc's owner
// owns (wc.Owner, default scaleplane): configurations labelled
// scaleplane.io/owner=<owner>, and in them only entries whose names end in
// ".<owner>.scaleplane.io". Any number of scaleplane binaries and embedding
// operators therefore share a cluster, each with its own owner:
//
//   - an entry of a profiled kind that exists keeps its clientConfig's
//     Service or URL and caBundle (where the installation put them, and
//     what a CA injector filled in); everything else is the configuration's
//     (wc): rules from the profile, the handler's path, failurePolicy,
//     selectors, timeout. So a change of the configuration (a helm
//     upgrade) reaches existing entries at the next start, and an entry
//     edited by hand (a break-glass failurePolicy: Ignore) is put back to
//     what the configuration says (docs/production.md);
//   - an entry of a new profile is added as Configurations makes it, with the
//     clientConfig of an existing entry of the same owner (same Service or
//     URL and CA bundle) and the new entry's own path;
//   - an entry of the owner that matches no profile is removed;
//   - every other entry is kept as it is (moved before the owner's own).
//
// A configuration labelled for another owner is an error, never written. A
// configuration without the label (made by a release before owners, when
// every entry in it was scaleplane's) is adopted: it gets the label, and
// its entries are renamed with the owner, keeping their settings.
//
// Both configurations must exist (apply config/webhook first) and the
// mutating one must keep at least one entry to copy a clientConfig from
// when it gains one; the validating one likewise (SyncConfigurationsWith
// lifts that). Writes are updates with optimistic concurrency, retried on
// conflict, and happen only on a change.
func SyncConfigurations(ctx context.Context, c client.Client, views []*profile.Compiled, wc ConfigurationOptions) error {
	return SyncConfigurationsWith(ctx, c, views, wc, nil)
}

// SyncConfigurationsWith is SyncConfigurations for configurations that may
// not exist or may have no entry yet: the release manifest and the Helm
// chart ship them empty, since which kinds are profiled is only known from
// the configuration scaleplane runs with, and an embedding operator may
// ship none. A new entry with no entry of its owner to copy from gets
// clientConfig(path), the Service (or URL) the process serves on, and a
// missing configuration is created as Configurations makes it; a nil
// clientConfig makes both an error, as in SyncConfigurations.
func SyncConfigurationsWith(ctx context.Context, c client.Client, views []*profile.Compiled, wc ConfigurationOptions, clientConfig func(path string) admissionregistrationv1.WebhookClientConfig) error {
	return syncConfigurations(ctx, c, views, wc, clientConfig, dispatchPaths)
}

// SyncDispatchConfigurations is SyncConfigurationsWith, under the name it
// had while SyncConfigurationsWith wrote the per-kind paths (perkind.go).
// Call either whenever the active kinds change.
func SyncDispatchConfigurations(ctx context.Context, c client.Client, views []*profile.Compiled, wc ConfigurationOptions, clientConfig func(path string) admissionregistrationv1.WebhookClientConfig) error {
	return syncConfigurations(ctx, c, views, wc, clientConfig, dispatchPaths)
}

func syncConfigurations(ctx context.Context, c client.Client, views []*profile.Compiled, wc ConfigurationOptions, clientConfig func(path string) admissionregistrationv1.WebhookClientConfig, paths handlerPaths) error {
	mode, err := ResolveAdmission(c.RESTMapper(), wc.Admission)
	if err != nil {
		return err
	}
	wc.Admission = mode
	// The owner's admission policies go with its entries (SyncPolicies).
	// Policies first when they take over, so no write passes between the
	// entries narrowing and the policies existing; the entries first when
	// the webhooks take back every write.
	if mode == configv1alpha2.AdmissionPolicies {
		if err := SyncPolicies(ctx, c, views, wc); err != nil {
			return err
		}
	}
	if err := syncEntries(ctx, c, views, wc, clientConfig, paths); err != nil {
		return err
	}
	if mode != configv1alpha2.AdmissionPolicies {
		return SyncPolicies(ctx, c, views, wc)
	}
	return nil
}

func syncEntries(ctx context.Context, c client.Client, views []*profile.Compiled, wc ConfigurationOptions, clientConfig func(path string) admissionregistrationv1.WebhookClientConfig, paths handlerPaths) error {
	owner := ownerOf(wc)
	wantM, wantV := configurations(views, wc, pathOnly, paths)
	var createM, createV func() client.Object
	if clientConfig != nil {
		fullM, fullV := configurations(views, wc, clientConfig, paths)
		createM = func() client.Object { return fullM.DeepCopy() }
		createV = func() client.Object { return fullV.DeepCopy() }
	}
	errM := syncConfiguration(ctx, c, &admissionregistrationv1.MutatingWebhookConfiguration{}, "MutatingWebhookConfiguration", wantM.Name, owner, createM,
		func(obj client.Object, adopt bool) (bool, error) {
			have := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
			merged, err := mergeEntries(have.Webhooks, wantM.Webhooks, clientConfig, owner, adopt, func(w *admissionregistrationv1.MutatingWebhook) entry {
				return entry{&w.Name, &w.ClientConfig, &w.Rules}
			})
			if err != nil || equality.Semantic.DeepEqual(merged, have.Webhooks) {
				return false, err
			}
			have.Webhooks = merged
			return true, nil
		})
	errV := syncConfiguration(ctx, c, &admissionregistrationv1.ValidatingWebhookConfiguration{}, "ValidatingWebhookConfiguration", wantV.Name, owner, createV,
		func(obj client.Object, adopt bool) (bool, error) {
			have := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
			merged, err := mergeEntries(have.Webhooks, wantV.Webhooks, clientConfig, owner, adopt, func(w *admissionregistrationv1.ValidatingWebhook) entry {
				return entry{&w.Name, &w.ClientConfig, &w.Rules}
			})
			if err != nil || equality.Semantic.DeepEqual(merged, have.Webhooks) {
				return false, err
			}
			have.Webhooks = merged
			return true, nil
		})
	return errors.Join(errM, errV)
}

// pathOnly lets SyncConfigurations reuse Configurations: the path is all a
// new entry takes from it; the rest of its clientConfig is copied from an
// entry already in the cluster.
func pathOnly(path string) admissionregistrationv1.WebhookClientConfig {
	p := path
	return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Path: &p}}
}

// errNotOwned is a configuration of another owner: retrying cannot help.
var errNotOwned = errors.New("not owned")

// syncConfiguration gets the configuration called name into obj (creating
// it with create when it is missing and create is set), checks that it is
// owner's, lets merge change it and updates it when merge reports a change.
// merge is told to adopt the entries of a configuration without an owner.
func syncConfiguration(ctx context.Context, c client.Client, obj client.Object, kind, name, owner string, create func() client.Object, merge func(obj client.Object, adopt bool) (bool, error)) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
			if !apierrors.IsNotFound(err) || create == nil {
				return err
			}
			err := c.Create(ctx, create())
			if apierrors.IsAlreadyExists(err) {
				// Made meanwhile (another replica): read it and merge.
				return apierrors.NewConflict(admissionregistrationv1.Resource(kind), name, err)
			}
			if err == nil {
				ctrl.LoggerFrom(ctx).Info("webhook configuration created", "kind", kind, "name", name, "owner", owner)
			}
			return err
		}
		got, labelled := obj.GetLabels()[v1alpha1.LabelOwner]
		if labelled && got != owner {
			return fmt.Errorf("%w: it is labelled %s=%s, and this process's owner is %q; give this process other configuration names (or another owner) instead of taking another's", errNotOwned, v1alpha1.LabelOwner, got, owner)
		}
		changed, err := merge(obj, !labelled)
		if err != nil {
			return err
		}
		if !labelled {
			labels := obj.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			labels[v1alpha1.LabelOwner] = owner
			obj.SetLabels(labels)
			changed = true
		}
		if !changed {
			return nil
		}
		if err := c.Update(ctx, obj); err != nil {
			return err
		}
		ctrl.LoggerFrom(ctx).Info("webhook configuration brought in line with the profiles", "kind", kind, "name", name, "owner", owner, "adopted", !labelled)
		return nil
	})
	if err != nil {
		return fmt.Errorf("sync %s %q: %w", kind, name, err)
	}
	return nil
}

// entry gives mergeEntries access to the fields it manages in the two
// webhook entry types.
type entry struct {
	name         *string
	clientConfig *admissionregistrationv1.WebhookClientConfig
	rules        *[]admissionregistrationv1.RuleWithOperations
}

// mergeEntries returns have's entries that are not owner's, unchanged and
// in their order, followed by want's entries in want's order, each taken
// from have with want's rules when have has it, else want's entry with a
// clientConfig derived from owner's first entry in have, or from fallback
// when owner has none. With adopt every entry of have is owner's, and one
// found under its name from before owners is renamed. It does not change
// have.
func mergeEntries[W any](have, want []W, fallback func(path string) admissionregistrationv1.WebhookClientConfig, owner string, adopt bool, fields func(*W) entry) ([]W, error) {
	byName := make(map[string]*W, len(have))
	var foreign []W
	var first *W
	for i := range have {
		name := *fields(&have[i]).name
		if !adopt && !ownsEntry(name, owner) {
			foreign = append(foreign, deepCopy(have[i]))
			continue
		}
		byName[name] = &have[i]
		if first == nil {
			first = &have[i]
		}
	}
	out := make([]W, 0, len(foreign)+len(want))
	out = append(out, foreign...)
	for i := range want {
		w := fields(&want[i])
		h, ok := byName[*w.name]
		if !ok && adopt {
			h, ok = byName[strings.TrimSuffix(*w.name, "."+owner+v1alpha1.OwnerEntrySuffix)]
		}
		if ok {
			// The configuration's entry, with the installation's Service or
			// URL and CA bundle. The path is the handler's, so it is ours to
			// set (a kind moved to the dispatcher).
			kept := deepCopy(want[i])
			cc := *fields(h).clientConfig.DeepCopy()
			if want := *w.clientConfig.Service.Path; !callsPath(cc, want) {
				var err error
				if cc, err = withPath(cc, want); err != nil {
					return nil, fmt.Errorf("entry %q: %w", *w.name, err)
				}
			}
			*fields(&kept).clientConfig = cc
			out = append(out, kept)
			continue
		}
		added := deepCopy(want[i])
		path := *w.clientConfig.Service.Path
		switch {
		case first != nil:
			cc, err := withPath(*fields(first).clientConfig, path)
			if err != nil {
				return nil, fmt.Errorf("entry %q: %w", *w.name, err)
			}
			*fields(&added).clientConfig = cc
		case fallback != nil:
			*fields(&added).clientConfig = fallback(path)
		default:
			return nil, fmt.Errorf("it has no webhook entry of owner %q to copy a clientConfig from for the new entry %q; apply config/webhook (or Configurations' output) first", owner, *w.name)
		}
		out = append(out, added)
	}
	return out, nil
}

// deepCopy copies an entry through its generated DeepCopy.
func deepCopy[W any](w W) W {
	switch e := any(&w).(type) {
	case *admissionregistrationv1.MutatingWebhook:
		return any(*e.DeepCopy()).(W)
	case *admissionregistrationv1.ValidatingWebhook:
		return any(*e.DeepCopy()).(W)
	}
	panic(fmt.Sprintf("deepCopy: unexpected webhook entry type %T", w))
}

// callsPath reports whether cc calls path already, however it spells it
// (envtest writes URLs as host:port//path).
func callsPath(cc admissionregistrationv1.WebhookClientConfig, want string) bool {
	switch {
	case cc.Service != nil:
		return cc.Service.Path != nil && path.Clean(*cc.Service.Path) == want
	case cc.URL != nil:
		u, err := url.Parse(*cc.URL)
		return err == nil && path.Clean(u.Path) == want
	}
	return false
}

// withPath returns a copy of cc that calls path instead.
func withPath(cc admissionregistrationv1.WebhookClientConfig, path string) (admissionregistrationv1.WebhookClientConfig, error) {
	out := *cc.DeepCopy()
	switch {
	case out.Service != nil:
		out.Service.Path = &path
	case out.URL != nil:
		u, err := url.Parse(*out.URL)
		if err != nil {
			return out, fmt.Errorf("clientConfig.url %q of an existing entry does not parse: %w; fix it", *out.URL, err)
		}
		u.Path, u.RawPath = path, ""
		s := u.String()
		out.URL = &s
	default:
		return out, errors.New("the existing entry's clientConfig has neither service nor url; fix it")
	}
	return out, nil
}

// ConfigurationSync is a manager Runnable that runs SyncConfigurations once
// at start, retrying with backoff while the API server is unavailable.
// Every replica runs it (it needs no leader): they all compute the same
// configurations, so concurrent runs converge.
type ConfigurationSync struct {
	// Client writes the configurations; it should read live, not through a
	// cache, so that a start-up sync needs no watch on webhook
	// configurations. NewConfigurationSync builds one.
	Client client.Client
	// Views are the profiles the configurations are made to match.
	Views []*profile.Compiled
	// Webhook names the configurations.
	Webhook ConfigurationOptions
	// ClientConfig, when set, gives the clientConfig of a new entry in a
	// configuration that has none to copy (see SyncConfigurationsWith).
	ClientConfig func(path string) admissionregistrationv1.WebhookClientConfig
	// Dispatch is kept for callers that set it: every sync writes the
	// dispatcher's paths, with it or without (perkind.go).
	Dispatch bool
	// Timeout bounds the retries; when it passes, Start returns the last
	// error and the manager stops, so a misconfigured installation is seen
	// at once rather than serving with stale rules. Default 2 minutes.
	Timeout time.Duration
}

var (
	_ manager.Runnable               = &ConfigurationSync{}
	_ manager.LeaderElectionRunnable = &ConfigurationSync{}
)

// NewConfigurationSync returns a ConfigurationSync using a live client
// built from mgr's config; add it with mgr.Add.
func NewConfigurationSync(mgr manager.Manager, views []*profile.Compiled, wc ConfigurationOptions) (*ConfigurationSync, error) {
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("build the webhook configuration client: %w", err)
	}
	return &ConfigurationSync{Client: c, Views: views, Webhook: wc}, nil
}

// Start implements manager.Runnable.
func (s *ConfigurationSync) Start(ctx context.Context) error {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	retryCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	log := ctrl.Log.WithName("webhooks").WithName("configuration-sync")
	var last error
	err := wait.ExponentialBackoffWithContext(retryCtx, wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 1 << 30, Cap: 10 * time.Second},
		func(ctx context.Context) (bool, error) {
			last = SyncConfigurationsWith(ctrl.LoggerInto(ctx, log), s.Client, s.Views, s.Webhook, s.ClientConfig)
			if errors.Is(last, errNotOwned) {
				// Another owner's configuration stays another's: waiting
				// cannot change that.
				return false, last
			}
			if last != nil {
				log.Error(last, "webhook configurations not in line with the profiles yet; retrying")
			}
			return last == nil, nil
		})
	switch {
	case errors.Is(err, errNotOwned):
		return err
	case err == nil, ctx.Err() != nil:
		// Done, or the manager is stopping: nothing to report.
		return nil
	case last != nil:
		return fmt.Errorf("webhook configurations not in line with the profiles after %s: %w", timeout, last)
	}
	return err
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (s *ConfigurationSync) NeedLeaderElection() bool { return false }
