package certs

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
)

// Annotations this package writes. They live here, next to the only code
// that reads them.
const (
	// InjectCAFromAnnotation asks cert-manager's CA injector to copy the CA
	// of the named Certificate ("namespace/name") into caBundle.
	InjectCAFromAnnotation = cmapi.WantInjectAnnotation

	// RevisionAnnotation on the self-signed Secret counts its writes.
	RevisionAnnotation = "certs.scaleplane.io/revision"
	// CAStagedAtAnnotation on the self-signed Secret records when the
	// signing CA joined the bundle (RFC 3339), to time the switch of the
	// serving certificate to it.
	CAStagedAtAnnotation = "certs.scaleplane.io/ca-staged-at"
	// InjectedRevisionAnnotation on a webhook configuration records which
	// Secret ("uid/revision") its caBundle came from, so that a replica that
	// read an older Secret never overwrites a newer bundle.
	InjectedRevisionAnnotation = "certs.scaleplane.io/injected-revision"
)

// LabelManagedBy=ManagedByValue marks the objects this package creates (the
// self-signed Secret, cert-manager objects), as the controllers mark their
// HPAs (api/v1alpha1 names the same pair), so that what an uninstall leaves
// behind can be found.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByValue = "scaleplane"
)

// injection identifies the Secret content a bundle comes from.
type injection struct {
	bundle   []byte
	uid      types.UID
	revision int64
	// owns limits the injection to these entries (nil: all).
	owns func(entryName string) bool
}

func (in injection) annotation() string {
	return fmt.Sprintf("%s/%d", in.uid, in.revision)
}

// newer reports whether a configuration annotated with current may be
// overwritten by in: always for another Secret (it was re-created), otherwise
// only by the same or a later revision.
func (in injection) newer(current string) bool {
	uid, rev, ok := strings.Cut(current, "/")
	if !ok || types.UID(uid) != in.uid {
		return true
	}
	n, err := strconv.ParseInt(rev, 10, 64)
	return err != nil || in.revision >= n
}

// InjectCABundle writes bundle into caBundle of every webhook of the named
// configurations, patching nothing else. Missing configurations are
// returned in missing, not as an error: they are injected when they appear.
// Use it for webhook configurations created after the Secret, e.g. by
// `scaleplane dev`; a Rotator calls it on every change.
func InjectCABundle(ctx context.Context, c client.Client, bundle []byte, mutating, validating []string) (missing []string, err error) {
	return inject(ctx, c, injection{bundle: bundle}, mutating, validating)
}

func inject(ctx context.Context, c client.Client, in injection, mutating, validating []string) ([]string, error) {
	var missing []string
	kinds := []struct {
		kind  string
		names []string
		obj   func() client.Object
	}{
		{"MutatingWebhookConfiguration", mutating, func() client.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} }},
		{"ValidatingWebhookConfiguration", validating, func() client.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} }},
	}
	for _, k := range kinds {
		for _, name := range k.names {
			cfg := k.obj()
			found, err := patchBundle(ctx, c, k.kind, name, cfg, in, func() bool {
				changed := false
				for _, cc := range clientConfigs(cfg, in.owns) {
					changed = setBundle(cc, in.bundle) || changed
				}
				return changed
			})
			if err != nil {
				return missing, err
			}
			if !found {
				missing = append(missing, k.kind+"/"+name)
			}
		}
	}
	return missing, nil
}

// clientConfigs are the clientConfigs of the webhooks of a mutating or
// validating webhook configuration that owns accepts (all when nil).
func clientConfigs(cfg client.Object, owns func(string) bool) []*admissionregistrationv1.WebhookClientConfig {
	var out []*admissionregistrationv1.WebhookClientConfig
	add := func(name string, cc *admissionregistrationv1.WebhookClientConfig) {
		if owns == nil || owns(name) {
			out = append(out, cc)
		}
	}
	switch o := cfg.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for i := range o.Webhooks {
			add(o.Webhooks[i].Name, &o.Webhooks[i].ClientConfig)
		}
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i := range o.Webhooks {
			add(o.Webhooks[i].Name, &o.Webhooks[i].ClientConfig)
		}
	}
	return out
}

func setBundle(cc *admissionregistrationv1.WebhookClientConfig, bundle []byte) bool {
	if bytes.Equal(cc.CABundle, bundle) {
		return false
	}
	cc.CABundle = bundle
	return true
}

// patchBundle reads the configuration, lets set change it, and sends a
// strategic merge patch (webhooks merge by name, so the patch names only
// caBundle) guarded by resourceVersion: a concurrent writer makes it fail
// with a conflict instead of being overwritten.
func patchBundle(ctx context.Context, c client.Client, kind, name string, cfg client.Object, in injection, set func() bool) (bool, error) {
	if err := c.Get(ctx, client.ObjectKey{Name: name}, cfg); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("get %s %q: %w", kind, name, err)
	}
	track := in.uid != ""
	if track && !in.newer(cfg.GetAnnotations()[InjectedRevisionAnnotation]) {
		return true, nil
	}
	base := cfg.DeepCopyObject().(client.Object)
	changed := set()
	if track && cfg.GetAnnotations()[InjectedRevisionAnnotation] != in.annotation() {
		ann := cfg.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[InjectedRevisionAnnotation] = in.annotation()
		cfg.SetAnnotations(ann)
		changed = true
	}
	if !changed {
		return true, nil
	}
	if err := c.Patch(ctx, cfg, client.StrategicMergeFrom(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return true, fmt.Errorf("inject CA bundle into %s %q: %w", kind, name, err)
	}
	return true, nil
}
