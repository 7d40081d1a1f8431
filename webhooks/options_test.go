package webhooks

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
)

func TestConfigurationOptionsFromConfigCarriesEveryEntrySetting(t *testing.T) {
	ns := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	obj := &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}
	in := configv1alpha2.Webhook{
		Port: 9443, Host: "127.0.0.1", CertDir: "/certs",
		Owner:                       "cache-operator",
		MutatingConfigurationName:   "m",
		ValidatingConfigurationName: "v",
		TimeoutSeconds:              7,
		NamespaceSelector:           ns,
		ObjectSelector:              obj,
		ExcludedNamespaces:          []string{"ops"},
		FailurePolicy:               configv1alpha2.FailurePolicies{Mutate: "Ignore", Validate: "Fail", Scale: "Ignore"},
		Admission:                   "policies",
	}
	want := ConfigurationOptions{
		Owner:                       "cache-operator",
		MutatingConfigurationName:   "m",
		ValidatingConfigurationName: "v",
		TimeoutSeconds:              7,
		NamespaceSelector:           ns,
		ObjectSelector:              obj,
		ExcludedNamespaces:          []string{"ops"},
		FailurePolicy:               FailurePolicies{Mutate: "Ignore", Validate: "Fail", Scale: "Ignore"},
		Admission:                   AdmissionPolicies,
	}
	if diff := cmp.Diff(want, ConfigurationOptionsFromConfig(in)); diff != "" {
		t.Errorf("ConfigurationOptionsFromConfig (-want +got):\n%s", diff)
	}
	// Every field of the options is filled: a field added to ConfigurationOptions
	// and forgotten in the conversion leaves a zero here.
	got := reflect.ValueOf(ConfigurationOptionsFromConfig(in))
	for i := range got.NumField() {
		if got.Field(i).IsZero() {
			t.Errorf("ConfigurationOptions.%s is not set from the configuration", got.Type().Field(i).Name)
		}
	}
}

func TestConfigurationOptionsFromConfigKeepsEmptyExclusionListApartFromNil(t *testing.T) {
	if got := ConfigurationOptionsFromConfig(configv1alpha2.Webhook{}).ExcludedNamespaces; got != nil {
		t.Errorf("unset excludedNamespaces = %#v, want nil (the default, [kube-system])", got)
	}
	if got := ConfigurationOptionsFromConfig(configv1alpha2.Webhook{ExcludedNamespaces: []string{}}).ExcludedNamespaces; got == nil || len(got) != 0 {
		t.Errorf("explicit empty excludedNamespaces = %#v, want an empty, non-nil list (exclude none)", got)
	}
}
