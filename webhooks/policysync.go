package webhooks

import (
	"context"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/policies"
	"github.com/scaleplane/scaleplane/profile"
)

// ResolveAdmission is mode with "auto" decided: "policies" when the API
// server serves admissionregistration.k8s.io/v1 MutatingAdmissionPolicy
// (found through mapper, which reads discovery), "webhooks" otherwise. An
// empty mode (a library caller's zero Webhook) is "webhooks".
func ResolveAdmission(mapper apimeta.RESTMapper, mode string) (string, error) {
	switch mode {
	case "", configv1alpha2.AdmissionWebhooks:
		return configv1alpha2.AdmissionWebhooks, nil
	case configv1alpha2.AdmissionPolicies:
		return mode, nil
	case configv1alpha2.AdmissionAuto:
	default:
		return "", fmt.Errorf("webhook.admission %q: must be %s, %s or %s", mode, configv1alpha2.AdmissionWebhooks, configv1alpha2.AdmissionPolicies, configv1alpha2.AdmissionAuto)
	}
	gk := schema.GroupKind{Group: admissionregistrationv1.GroupName, Kind: "MutatingAdmissionPolicy"}
	switch _, err := mapper.RESTMapping(gk, admissionregistrationv1.SchemeGroupVersion.Version); {
	case err == nil:
		return configv1alpha2.AdmissionPolicies, nil
	case apimeta.IsNoMatchError(err):
		return configv1alpha2.AdmissionWebhooks, nil
	default:
		return "", fmt.Errorf("webhook.admission auto: discover %s/v1: %w", gk, err)
	}
}

// SyncPolicies brings the admission policies and bindings of wc's owner
// in line with views: in "policies" mode each view's policies.ForOwner set
// is created or updated; in every mode a policy or binding labelled for
// the owner that no view wants is deleted, so a deleted profile, or a
// switch back to "webhooks", leaves none behind. Objects of another owner,
// or without the owner label, are never written nor deleted; one of
// another owner under a wanted name is an error. wc.Admission must be
// resolved (ResolveAdmission). In "webhooks" mode an API server without
// the policy kinds, a role without rights on them, or a client whose
// scheme lacks them is not an error: there is nothing of the owner's to
// delete.
func SyncPolicies(ctx context.Context, c client.Client, views []*profile.Compiled, wc ConfigurationOptions) error {
	owner := ownerOf(wc)
	want := map[string][]client.Object{}
	if wc.Admission == configv1alpha2.AdmissionPolicies {
		for _, v := range views {
			s := PolicySet(v, wc)
			want[s.Mutating.Name] = s.Objects()
		}
	}
	var errs []error
	for _, objs := range want {
		for _, obj := range objs {
			errs = append(errs, applyPolicyObject(ctx, c, obj, owner))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sync admission policies: %w", err)
	}
	lists := []client.ObjectList{
		&admissionregistrationv1.MutatingAdmissionPolicyBindingList{},
		&admissionregistrationv1.ValidatingAdmissionPolicyBindingList{},
		&admissionregistrationv1.MutatingAdmissionPolicyList{},
		&admissionregistrationv1.ValidatingAdmissionPolicyList{},
	}
	for _, list := range lists {
		err := c.List(ctx, list, client.MatchingLabels{v1alpha1.LabelOwner: owner})
		if err != nil {
			if len(want) == 0 && (apimeta.IsNoMatchError(err) || apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || runtime.IsNotRegisteredError(err)) {
				continue
			}
			errs = append(errs, fmt.Errorf("list %T: %w", list, err))
			continue
		}
		items, err := apimeta.ExtractList(list)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, item := range items {
			obj := item.(client.Object)
			if _, ok := want[obj.GetName()]; ok {
				continue
			}
			if err := client.IgnoreNotFound(c.Delete(ctx, obj)); err != nil {
				errs = append(errs, fmt.Errorf("delete %T %s: %w", obj, obj.GetName(), err))
				continue
			}
			ctrl.LoggerFrom(ctx).Info("admission policy of no profile deleted", "kind", fmt.Sprintf("%T", obj), "name", obj.GetName(), "owner", owner)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sync admission policies: %w", err)
	}
	return nil
}

// PolicySet is view's policies as wc's owner writes them
// (policies.ForOwner), with bindings that reach the objects the owner's
// webhook entries reach: wc's namespace and object selectors, the
// excluded namespaces and the break-glass label (NamespaceSelector), so
// turning admission off for a namespace turns off its policies too.
func PolicySet(view *profile.Compiled, wc ConfigurationOptions) policies.Set {
	s := policies.ForOwner(view, ownerOf(wc))
	match := &admissionregistrationv1.MatchResources{NamespaceSelector: NamespaceSelector(wc), ObjectSelector: selector(wc.ObjectSelector)}
	s.MutatingBinding.Spec.MatchResources = match.DeepCopy()
	s.ValidatingBinding.Spec.MatchResources = match
	return s
}

// applyPolicyObject creates want, or updates the owner's object of its
// name to want's spec when it differs.
func applyPolicyObject(ctx context.Context, c client.Client, want client.Object, owner string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		have := want.DeepCopyObject().(client.Object)
		switch err := c.Get(ctx, client.ObjectKeyFromObject(want), have); {
		case apierrors.IsNotFound(err):
			err := c.Create(ctx, want.DeepCopyObject().(client.Object))
			if err == nil {
				ctrl.LoggerFrom(ctx).Info("admission policy created", "kind", fmt.Sprintf("%T", want), "name", want.GetName(), "owner", owner)
			}
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(admissionregistrationv1.Resource("policies"), want.GetName(), err)
			}
			return err
		case err != nil:
			return fmt.Errorf("get %T %s: %w", want, want.GetName(), err)
		}
		if got := have.GetLabels()[v1alpha1.LabelOwner]; got != owner {
			return fmt.Errorf("%w: %T %s is labelled %s=%q, and this process's owner is %q; remove it, or give this process another owner", errNotOwned, want, want.GetName(), v1alpha1.LabelOwner, got, owner)
		}
		if !setPolicySpec(have, want) {
			return nil
		}
		return c.Update(ctx, have)
	})
}

// setPolicySpec copies want's spec and labels into have and reports
// whether that changed have's spec.
func setPolicySpec(have, want client.Object) bool {
	have.SetLabels(want.GetLabels())
	switch h := have.(type) {
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		w := want.(*admissionregistrationv1.MutatingAdmissionPolicy)
		changed := !equality.Semantic.DeepEqual(h.Spec, w.Spec)
		h.Spec = w.Spec
		return changed
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		w := want.(*admissionregistrationv1.MutatingAdmissionPolicyBinding)
		changed := !equality.Semantic.DeepEqual(h.Spec, w.Spec)
		h.Spec = w.Spec
		return changed
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		w := want.(*admissionregistrationv1.ValidatingAdmissionPolicy)
		changed := !equality.Semantic.DeepEqual(h.Spec, w.Spec)
		h.Spec = w.Spec
		return changed
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		w := want.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
		changed := !equality.Semantic.DeepEqual(h.Spec, w.Spec)
		h.Spec = w.Spec
		return changed
	}
	return false
}
