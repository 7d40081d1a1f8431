package webhooks

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
)

// ConfigurationOptions are the settings of the webhook configurations this
// package renders and keeps in line (Configurations, SyncConfigurations,
// ConfigurationSync). They are the library's own type: the configuration
// file's webhook section (package api/config/v1alpha2) becomes one through
// ConfigurationOptionsFromConfig, at the edge, so the file format can change
// without changing this API. The zero value is valid: every empty field
// takes the default named on it.
type ConfigurationOptions struct {
	// Owner names who owns the configurations and entries: they carry the
	// label scaleplane.io/owner=<owner>, each entry's name ends in
	// ".<owner>.scaleplane.io", and a sync touches nothing else. A DNS
	// label. Default scaleplane (the binary's).
	Owner string
	// MutatingConfigurationName and ValidatingConfigurationName name the
	// two configurations. Defaults: <owner>-mutating-webhook-configuration
	// and <owner>-validating-webhook-configuration.
	MutatingConfigurationName   string
	ValidatingConfigurationName string
	// TimeoutSeconds for each webhook call, 1 to 30. Default 10.
	TimeoutSeconds int32
	// NamespaceSelector and ObjectSelector restrict which objects reach the
	// webhooks.
	NamespaceSelector *metav1.LabelSelector
	ObjectSelector    *metav1.LabelSelector
	// ExcludedNamespaces never reach the webhooks, whatever
	// NamespaceSelector says. Nil means [kube-system]; an empty, non-nil
	// list excludes none.
	ExcludedNamespaces []string
	// FailurePolicy is what the API server does with a write when the
	// webhook cannot be called, per kind of entry.
	FailurePolicy FailurePolicies
	// Admission is who admits the profiled kinds' writes: "webhooks"
	// (default), "policies" (the API server's admission policies, the
	// webhook only where they cannot decide) or "auto" (policies where the
	// API server serves MutatingAdmissionPolicy v1). ResolveAdmission
	// turns auto into one of the others.
	Admission string
}

// The values of ConfigurationOptions.Admission (the configuration file's
// webhook.admission takes the same).
const (
	AdmissionWebhooks = configv1alpha2.AdmissionWebhooks
	AdmissionPolicies = configv1alpha2.AdmissionPolicies
	AdmissionAuto     = configv1alpha2.AdmissionAuto
)

// FailurePolicies are the failure policies of the three kinds of entry,
// each "Fail" or "Ignore"; empty means Fail.
type FailurePolicies struct {
	// Mutate is the defaulting and fan-out entry on CREATE and UPDATE.
	Mutate string
	// Validate is the validating entry on CREATE and UPDATE.
	Validate string
	// Scale is the validating entry on UPDATE of <resource>/scale.
	Scale string
}

// ConfigurationOptionsFromConfig is the one conversion from the configuration file's
// webhook section to ConfigurationOptions. The server fields (port, host, certificate
// folder) are not among them: they belong to the webhook server.
func ConfigurationOptionsFromConfig(c configv1alpha2.Webhook) ConfigurationOptions {
	return ConfigurationOptions{
		Owner:                       c.Owner,
		MutatingConfigurationName:   c.MutatingConfigurationName,
		ValidatingConfigurationName: c.ValidatingConfigurationName,
		TimeoutSeconds:              c.TimeoutSeconds,
		NamespaceSelector:           c.NamespaceSelector,
		ObjectSelector:              c.ObjectSelector,
		ExcludedNamespaces:          c.ExcludedNamespaces,
		FailurePolicy: FailurePolicies{
			Mutate:   c.FailurePolicy.Mutate,
			Validate: c.FailurePolicy.Validate,
			Scale:    c.FailurePolicy.Scale,
		},
		Admission: c.Admission,
	}
}
