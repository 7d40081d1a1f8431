package webhooks

import (
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/policies"
	"github.com/scaleplane/scaleplane/profile"
)

// Configurations returns the webhook configurations that route every view's
// requests to the handlers Setup registers (views of built-in kinds, which
// get no webhook, aside; profile.BuiltIn): for each kind a mutating and a
// validating webhook on CREATE and UPDATE of the resource, and a validating
// webhook on UPDATE of "<resource>/scale", each calling the dispatcher's
// path of its role and kind (DispatchPath), as the binary's and the library
// builder's entries do. clientConfig gives each webhook's client
// configuration from its path (see ServiceClientConfig).
//
// Every field the API server would default is set, so a configuration read
// back from the cluster compares equal to the one written. Both carry the
// label scaleplane.io/owner=<wc.Owner> and every entry's name ends in
// ".<owner>.scaleplane.io" (see SyncConfigurations). The owner and names
// come from wc, with the defaults of package api/config/v1alpha2 when
// empty (owner scaleplane, the binary's).
func Configurations(views []*profile.Compiled, wc ConfigurationOptions, clientConfig func(path string) admissionregistrationv1.WebhookClientConfig) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	return configurations(views, wc, clientConfig, dispatchPaths)
}

// DispatchConfigurations is Configurations, under the name it had while
// Configurations rendered the per-kind paths (perkind.go).
func DispatchConfigurations(views []*profile.Compiled, wc ConfigurationOptions, clientConfig func(path string) admissionregistrationv1.WebhookClientConfig) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	return configurations(views, wc, clientConfig, dispatchPaths)
}

// handlerPaths name a kind's handler path of each role.
type handlerPaths struct {
	mutate, validate, scale func(schema.GroupVersionResource) string
}

// dispatchPaths are the dispatcher's paths, the only ones entries are
// written with.
var dispatchPaths = handlerPaths{
	func(gvr schema.GroupVersionResource) string { return DispatchPath(DispatchMutatePrefix, gvr) },
	func(gvr schema.GroupVersionResource) string { return DispatchPath(DispatchValidatePrefix, gvr) },
	func(gvr schema.GroupVersionResource) string { return DispatchPath(DispatchValidateScalePrefix, gvr) },
}

func configurations(views []*profile.Compiled, wc ConfigurationOptions, clientConfig func(path string) admissionregistrationv1.WebhookClientConfig, paths handlerPaths) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	owner := ownerOf(wc)
	mutatingName, validatingName := configurationNames(wc)
	labels := func() map[string]string { return map[string]string{v1alpha1.LabelOwner: owner} }
	m := &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: mutatingName, Labels: labels()},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{},
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: validatingName, Labels: labels()},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{},
	}
	timeout := wc.TimeoutSeconds
	if timeout == 0 {
		timeout = configv1alpha2.DefaultWebhookTimeoutSeconds
	}
	for _, view := range views {
		if !view.Admission() {
			// Never a webhook on a built-in kind (apps/v1 Deployment...):
			// a scaleplane that is down must not block a cluster's core
			// writes; the autoscaler checks such a kind's config itself.
			continue
		}
		gvr := view.GVR()
		mainRules := rules(gvr.Group, gvr.Version, gvr.Resource, admissionregistrationv1.Create, admissionregistrationv1.Update)
		scaleRules := rules(gvr.Group, gvr.Version, gvr.Resource+"/scale", admissionregistrationv1.Update)
		c := common{
			failurePolicy: failurePolicy(wc.FailurePolicy.Validate),
			matchPolicy:   admissionregistrationv1.Equivalent,
			sideEffects:   admissionregistrationv1.SideEffectClassNone,
			timeout:       timeout,
			nsSelector:    NamespaceSelector(wc),
			objSelector:   selector(wc.ObjectSelector),
		}
		mutatePolicy := failurePolicy(wc.FailurePolicy.Mutate)
		scale := c
		scale.failurePolicy = failurePolicy(wc.FailurePolicy.Scale)
		var when []admissionregistrationv1.MatchCondition
		if wc.Admission == configv1alpha2.AdmissionPolicies {
			// The kind's policies decide every write but those the match
			// condition names (policies.WebhookCondition), and /scale
			// writes are admitted while scaleplane is down: S1 needs the
			// main object, which no policy on /scale sees, and the
			// controller fans the count out when it is back (C1).
			when = []admissionregistrationv1.MatchCondition{policies.WebhookCondition(view)}
			scale.failurePolicy = admissionregistrationv1.Ignore
		}
		// IfNeeded: if a later mutating webhook changes replicas, ours runs
		// again so the groups follow (M5); Default is idempotent, so a second
		// run that finds nothing to do adds nothing.
		reinvoke := admissionregistrationv1.IfNeededReinvocationPolicy
		m.Webhooks = append(m.Webhooks, admissionregistrationv1.MutatingWebhook{
			Name:                    mutateName(gvr, owner),
			ClientConfig:            clientConfig(paths.mutate(gvr)),
			Rules:                   mainRules,
			FailurePolicy:           &mutatePolicy,
			MatchPolicy:             &c.matchPolicy,
			NamespaceSelector:       c.nsSelector,
			ObjectSelector:          c.objSelector,
			SideEffects:             &c.sideEffects,
			TimeoutSeconds:          &c.timeout,
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      &reinvoke,
			MatchConditions:         slices.Clone(when),
		})
		validate := c.validating(validateName(gvr, owner), clientConfig(paths.validate(gvr)), mainRules)
		validate.MatchConditions = slices.Clone(when)
		v.Webhooks = append(v.Webhooks, validate, scale.validating(scaleName(gvr, owner), clientConfig(paths.scale(gvr)), scaleRules))
	}
	return m, v
}

// ServiceClientConfig returns a clientConfig function for Configurations
// that sends requests to the named Service on port, as in config/webhook.
// The CA bundle is left for cert-manager's CA injector (or the certs
// package) to fill.
func ServiceClientConfig(namespace, name string, port int32) func(path string) admissionregistrationv1.WebhookClientConfig {
	return func(path string) admissionregistrationv1.WebhookClientConfig {
		p, pt := path, port
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Namespace: namespace, Name: name, Path: &p, Port: &pt,
		}}
	}
}

func configurationNames(wc ConfigurationOptions) (mutating, validating string) {
	mutating, validating = wc.MutatingConfigurationName, wc.ValidatingConfigurationName
	if mutating == "" {
		mutating = ownerOf(wc) + configv1alpha2.MutatingConfigurationSuffix
	}
	if validating == "" {
		validating = ownerOf(wc) + configv1alpha2.ValidatingConfigurationSuffix
	}
	return mutating, validating
}

// ownerOf is wc's owner, the binary's when left out.
func ownerOf(wc ConfigurationOptions) string {
	if wc.Owner == "" {
		return configv1alpha2.DefaultOwner
	}
	return wc.Owner
}

// OwnsEntry reports whether the webhook entry called name belongs to the
// owner of wc (its name ends in ".<owner>.scaleplane.io"). Code that edits
// entries of a configuration (re-pointing URLs, injecting a CA) must edit
// only these: another embedder may keep its entries there.
func OwnsEntry(wc ConfigurationOptions, name string) bool {
	return ownsEntry(name, ownerOf(wc))
}

// common holds the settings every webhook entry shares. Each entry gets its
// own copies so that editing one entry's pointer fields never edits another.
type common struct {
	failurePolicy           admissionregistrationv1.FailurePolicyType
	matchPolicy             admissionregistrationv1.MatchPolicyType
	sideEffects             admissionregistrationv1.SideEffectClass
	timeout                 int32
	nsSelector, objSelector *metav1.LabelSelector
}

func (c common) validating(name string, cc admissionregistrationv1.WebhookClientConfig, r []admissionregistrationv1.RuleWithOperations) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    name,
		ClientConfig:            cc,
		Rules:                   r,
		FailurePolicy:           &c.failurePolicy,
		MatchPolicy:             &c.matchPolicy,
		NamespaceSelector:       c.nsSelector.DeepCopy(),
		ObjectSelector:          c.objSelector.DeepCopy(),
		SideEffects:             &c.sideEffects,
		TimeoutSeconds:          &c.timeout,
		AdmissionReviewVersions: []string{"v1"},
	}
}

func rules(group, version, resource string, ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
	// Scope "*" is the API server's default, written out so that reading
	// the configuration back gives what was written.
	scope := admissionregistrationv1.AllScopes
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: ops,
		Rule: admissionregistrationv1.Rule{
			APIGroups:   []string{group},
			APIVersions: []string{version},
			Resources:   []string{resource},
			Scope:       &scope,
		},
	}}
}

// failurePolicy is p as the API type; empty (a library caller's zero
// Webhook) is Fail, the configuration's default.
func failurePolicy(p string) admissionregistrationv1.FailurePolicyType {
	if p == configv1alpha2.FailurePolicyIgnore {
		return admissionregistrationv1.Ignore
	}
	return admissionregistrationv1.Fail
}

// NamespaceSelector is the namespace selector of every entry wc's owner
// writes: wc.NamespaceSelector, narrowed so that no entry reaches a
// namespace of wc.ExcludedNamespaces (nil: kube-system) nor a namespace
// labelled scaleplane.io/admission=disabled, the break-glass a cluster
// administrator can set on one namespace while scaleplane is down
// (docs/production.md). The narrowing is a requirement added beside the
// user's, so a selector the user gives keeps meaning what it meant.
func NamespaceSelector(wc ConfigurationOptions) *metav1.LabelSelector {
	s := selector(wc.NamespaceSelector)
	excluded := wc.ExcludedNamespaces
	if excluded == nil {
		excluded = []string{configv1alpha2.DefaultExcludedNamespace}
	}
	if len(excluded) > 0 {
		s.MatchExpressions = append(s.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: append([]string(nil), excluded...),
		})
	}
	s.MatchExpressions = append(s.MatchExpressions, metav1.LabelSelectorRequirement{
		Key: v1alpha1.LabelAdmission, Operator: metav1.LabelSelectorOpNotIn, Values: []string{v1alpha1.AdmissionDisabled},
	})
	return s
}

// selector returns a copy of s, or the empty selector (match everything)
// the API server defaults a missing one to.
func selector(s *metav1.LabelSelector) *metav1.LabelSelector {
	if s == nil {
		return &metav1.LabelSelector{}
	}
	return s.DeepCopy()
}
