package webhooks

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/profile"
)

// entrySummary is what a test asserts of one webhook entry.
type entrySummary struct {
	Name      string
	Path      string
	Resources []string
	Ops       []admissionregistrationv1.OperationType
}

func summarize[W admissionregistrationv1.MutatingWebhook | admissionregistrationv1.ValidatingWebhook](ws []W) []entrySummary {
	var out []entrySummary
	for _, w := range ws {
		var name string
		var cc admissionregistrationv1.WebhookClientConfig
		var rules []admissionregistrationv1.RuleWithOperations
		switch e := any(w).(type) {
		case admissionregistrationv1.MutatingWebhook:
			name, cc, rules = e.Name, e.ClientConfig, e.Rules
		case admissionregistrationv1.ValidatingWebhook:
			name, cc, rules = e.Name, e.ClientConfig, e.Rules
		}
		s := entrySummary{Name: name}
		switch {
		case cc.Service != nil && cc.Service.Path != nil:
			s.Path = *cc.Service.Path
		case cc.URL != nil:
			s.Path = *cc.URL
		}
		for _, r := range rules {
			s.Resources = append(s.Resources, r.Resources...)
			s.Ops = append(s.Ops, r.Operations...)
		}
		out = append(out, s)
	}
	return out
}

var (
	createUpdate = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	updateOnly   = []admissionregistrationv1.OperationType{admissionregistrationv1.Update}
)

func urlConfig(path string) admissionregistrationv1.WebhookClientConfig {
	return admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:9443" + path), CABundle: []byte("CA")}
}

func TestConfigurations(t *testing.T) {
	views := testViews(t)
	wc := ConfigurationOptions{
		Owner:                       "cache-operator",
		MutatingConfigurationName:   "m",
		ValidatingConfigurationName: "v",
		TimeoutSeconds:              5,
		NamespaceSelector:           &metav1.LabelSelector{MatchLabels: map[string]string{"scaleplane.io/enabled": "true"}},
	}
	m, v := Configurations([]*profile.Compiled{views[zonedDatabase], views[function]}, wc, urlConfig)
	if m.Name != "m" || v.Name != "v" {
		t.Errorf("names %q, %q, want m, v", m.Name, v.Name)
	}
	owned := map[string]string{"scaleplane.io/owner": "cache-operator"}
	if diff := cmp.Diff(owned, m.Labels); diff != "" {
		t.Errorf("mutating labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(owned, v.Labels); diff != "" {
		t.Errorf("validating labels (-want +got):\n%s", diff)
	}
	wantM := []entrySummary{
		{"zoneddatabases.v1beta1.data.example.org.cache-operator.scaleplane.io", "https://127.0.0.1:9443/mutate/data.example.org/v1beta1/zoneddatabases", []string{"zoneddatabases"}, createUpdate},
		{"samplefunctions.v1alpha1.samples.scaleplane.io.cache-operator.scaleplane.io", "https://127.0.0.1:9443/mutate/samples.scaleplane.io/v1alpha1/samplefunctions", []string{"samplefunctions"}, createUpdate},
	}
	if diff := cmp.Diff(wantM, summarize(m.Webhooks)); diff != "" {
		t.Errorf("mutating entries (-want +got):\n%s", diff)
	}
	wantV := []entrySummary{
		{"zoneddatabases.v1beta1.data.example.org.cache-operator.scaleplane.io", "https://127.0.0.1:9443/validate/data.example.org/v1beta1/zoneddatabases", []string{"zoneddatabases"}, createUpdate},
		{"scale.zoneddatabases.v1beta1.data.example.org.cache-operator.scaleplane.io", "https://127.0.0.1:9443/validate-scale/data.example.org/v1beta1/zoneddatabases", []string{"zoneddatabases/scale"}, updateOnly},
		{"samplefunctions.v1alpha1.samples.scaleplane.io.cache-operator.scaleplane.io", "https://127.0.0.1:9443/validate/samples.scaleplane.io/v1alpha1/samplefunctions", []string{"samplefunctions"}, createUpdate},
		{"scale.samplefunctions.v1alpha1.samples.scaleplane.io.cache-operator.scaleplane.io", "https://127.0.0.1:9443/validate-scale/samples.scaleplane.io/v1alpha1/samplefunctions", []string{"samplefunctions/scale"}, updateOnly},
	}
	if diff := cmp.Diff(wantV, summarize(v.Webhooks)); diff != "" {
		t.Errorf("validating entries (-want +got):\n%s", diff)
	}
	for _, w := range v.Webhooks {
		if *w.TimeoutSeconds != 5 || *w.FailurePolicy != admissionregistrationv1.Fail || *w.MatchPolicy != admissionregistrationv1.Equivalent ||
			*w.SideEffects != admissionregistrationv1.SideEffectClassNone || !cmp.Equal(w.AdmissionReviewVersions, []string{"v1"}) {
			t.Errorf("%s: settings %d %s %s %s %v", w.Name, *w.TimeoutSeconds, *w.FailurePolicy, *w.MatchPolicy, *w.SideEffects, w.AdmissionReviewVersions)
		}
		// The user's selector, narrowed: never kube-system (the default
		// exclusion), never a namespace labelled for break-glass.
		wantNS := &metav1.LabelSelector{
			MatchLabels: map[string]string{"scaleplane.io/enabled": "true"},
			MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system"}},
				{Key: "scaleplane.io/admission", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"disabled"}},
			},
		}
		if diff := cmp.Diff(wantNS, w.NamespaceSelector); diff != "" {
			t.Errorf("%s: namespace selector (-want +got):\n%s", w.Name, diff)
		}
		if diff := cmp.Diff(&metav1.LabelSelector{}, w.ObjectSelector); diff != "" {
			t.Errorf("%s: object selector (-want +got):\n%s", w.Name, diff)
		}
	}
	// Entries share no memory: tuning one must not tune the others.
	*v.Webhooks[0].TimeoutSeconds = 30
	v.Webhooks[0].NamespaceSelector.MatchLabels["x"] = "y"
	if *v.Webhooks[1].TimeoutSeconds != 5 || *m.Webhooks[0].TimeoutSeconds != 5 || len(v.Webhooks[1].NamespaceSelector.MatchLabels) != 1 || len(wc.NamespaceSelector.MatchLabels) != 1 {
		t.Errorf("webhook entries share settings")
	}
}

func TestConfigurationsDefaults(t *testing.T) {
	m, v := Configurations(sampleViews(t), ConfigurationOptions{}, urlConfig)
	if m.Name != configv1alpha2.DefaultMutatingConfigurationName || v.Name != configv1alpha2.DefaultValidatingConfigurationName {
		t.Errorf("names %q, %q", m.Name, v.Name)
	}
	if got := *m.Webhooks[0].TimeoutSeconds; got != configv1alpha2.DefaultWebhookTimeoutSeconds {
		t.Errorf("timeout %d, want the default %d", got, configv1alpha2.DefaultWebhookTimeoutSeconds)
	}
	if len(m.Webhooks) != 3 || len(v.Webhooks) != 6 {
		t.Errorf("%d mutating and %d validating entries, want 3 and 6", len(m.Webhooks), len(v.Webhooks))
	}
}

func fakeClient(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

func TestSyncConfigurations(t *testing.T) {
	views := testViews(t)
	wc := ConfigurationOptions{}
	// The cluster's configurations as an older release left them: the
	// RackedCluster entries with a failure policy set by hand (a
	// break-glass) and an outdated rule, an entry of a profile since
	// removed, and no Function or foreign entries.
	svc := ServiceClientConfig("scaleplane-system", "scaleplane-webhook-service", 443)
	withCA := func(path string) admissionregistrationv1.WebhookClientConfig {
		cc := svc(path)
		cc.CABundle = []byte("CA-from-injector")
		return cc
	}
	oldViews := []*profile.Compiled{views[rackedCluster], views[workerGroup]}
	haveM, haveV := Configurations(oldViews, wc, withCA)
	haveM.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	haveM.Webhooks[0].Rules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	haveV.Webhooks[0].Rules[0].APIVersions = []string{"v1alpha0"}
	c := fakeClient(t, haveM, haveV)

	newViews := []*profile.Compiled{views[rackedCluster], views[function], views[zonedDatabase]}
	if err := SyncConfigurations(context.Background(), c, newViews, wc); err != nil {
		t.Fatal(err)
	}
	gotM := &admissionregistrationv1.MutatingWebhookConfiguration{}
	gotV := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: haveM.Name}, gotM); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), client.ObjectKey{Name: haveV.Name}, gotV); err != nil {
		t.Fatal(err)
	}

	// What a fresh install of the new profiles would have: the entry set by
	// hand is put back to the configuration's failure policy; only the
	// clientConfig (its Service and the injected CA) is the cluster's.
	wantM, wantV := Configurations(newViews, wc, withCA)
	if diff := cmp.Diff(wantM.Webhooks, gotM.Webhooks); diff != "" {
		t.Errorf("mutating entries (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantV.Webhooks, gotV.Webhooks); diff != "" {
		t.Errorf("validating entries (-want +got):\n%s", diff)
	}

	// A second sync finds nothing to do and writes nothing.
	rvM, rvV := gotM.ResourceVersion, gotV.ResourceVersion
	if err := SyncConfigurations(context.Background(), c, newViews, wc); err != nil {
		t.Fatal(err)
	}
	_ = c.Get(context.Background(), client.ObjectKey{Name: haveM.Name}, gotM)
	_ = c.Get(context.Background(), client.ObjectKey{Name: haveV.Name}, gotV)
	if gotM.ResourceVersion != rvM || gotV.ResourceVersion != rvV {
		t.Errorf("an in-line configuration was written again: resourceVersions %s->%s, %s->%s", rvM, gotM.ResourceVersion, rvV, gotV.ResourceVersion)
	}
}

func TestSyncConfigurationsURLClientConfig(t *testing.T) {
	views := testViews(t)
	haveM, haveV := Configurations([]*profile.Compiled{views[function]}, ConfigurationOptions{}, urlConfig)
	c := fakeClient(t, haveM, haveV)
	if err := SyncConfigurations(context.Background(), c, []*profile.Compiled{views[function], views[workerGroup]}, ConfigurationOptions{}); err != nil {
		t.Fatal(err)
	}
	got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	_ = c.Get(context.Background(), client.ObjectKey{Name: haveV.Name}, got)
	_, want := Configurations([]*profile.Compiled{views[function], views[workerGroup]}, ConfigurationOptions{}, urlConfig)
	if diff := cmp.Diff(want.Webhooks, got.Webhooks); diff != "" {
		t.Errorf("validating entries (-want +got):\n%s", diff)
	}
}

func TestSyncConfigurationsErrors(t *testing.T) {
	views := testViews(t)
	all := []*profile.Compiled{views[rackedCluster]}
	emptyM, emptyV := Configurations(nil, ConfigurationOptions{}, urlConfig)
	tests := []struct {
		name string
		objs []client.Object
		want []string
	}{{
		name: "configurations missing",
		want: []string{`sync MutatingWebhookConfiguration "scaleplane-mutating-webhook-configuration"`, `sync ValidatingWebhookConfiguration "scaleplane-validating-webhook-configuration"`, "not found"},
	}, {
		name: "no entry to copy a clientConfig from",
		objs: []client.Object{emptyM, emptyV},
		want: []string{`no webhook entry of owner "scaleplane" to copy a clientConfig from`, "apply config/webhook"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := SyncConfigurations(context.Background(), fakeClient(t, tc.objs...), all, ConfigurationOptions{})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestSyncFillsShippedEmptyConfigurations: the release manifest and
// the chart ship both configurations without entries (config/webhook); at
// start-up the binary fills them from its profiles with its own Service,
// exactly as Configurations makes them, and a second sync changes nothing.
func TestSyncFillsShippedEmptyConfigurations(t *testing.T) {
	views := sampleViews(t)
	wc := ConfigurationOptions{TimeoutSeconds: 7}
	emptyM, emptyV := Configurations(nil, wc, urlConfig)
	c := fakeClient(t, emptyM, emptyV)
	service := ServiceClientConfig(serviceNamespace, serviceName, servicePort)
	for range 2 {
		if err := SyncConfigurationsWith(context.Background(), c, views, wc, service); err != nil {
			t.Fatalf("sync: %v", err)
		}
	}
	wantM, wantV := Configurations(views, wc, service)
	gotM := &admissionregistrationv1.MutatingWebhookConfiguration{}
	gotV := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: wantM.Name}, gotM); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), client.ObjectKey{Name: wantV.Name}, gotV); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantM.Webhooks, gotM.Webhooks); diff != "" {
		t.Errorf("mutating entries (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantV.Webhooks, gotV.Webhooks); diff != "" {
		t.Errorf("validating entries (-want +got):\n%s", diff)
	}
}

// TestOwnership: a sync touches only its owner's configurations
// and, in them, only its owner's entries; another owner's configurations and
// entries are left byte for byte, and a configuration from before owners is
// adopted with its tuned settings.
func TestOwnership(t *testing.T) {
	views := testViews(t)
	mine := ConfigurationOptions{Owner: "cache-operator"}
	theirs := ConfigurationOptions{Owner: "scaleplane"}
	rc := []*profile.Compiled{views[rackedCluster]}
	fn := []*profile.Compiled{views[function]}
	// The binary's configurations, in line with its profiles.
	theirM, theirV := Configurations(rc, theirs, urlConfig)
	// Our configurations, where someone else keeps an entry of their own.
	foreignEntry := admissionregistrationv1.ValidatingWebhook{
		Name: "policy.example.org", ClientConfig: urlConfig("/policy"),
		SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
	}
	// A configuration from before owners, named as ours: unlabelled, entry
	// names without an owner, a tuned failure policy.
	legacyM, _ := Configurations(rc, mine, urlConfig)
	delete(legacyM.Labels, "scaleplane.io/owner")
	legacyM.Webhooks[0].Name = "rackedclusters.v1alpha1.samples.scaleplane.io"
	legacyM.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)

	tests := []struct {
		name string
		// have are the cluster's configurations before the sync.
		have func() []client.Object
		// views are our profiles; wantM and wantV our configurations'
		// entries after the sync, by name.
		views        []*profile.Compiled
		wantM, wantV []string
		wantErr      string
	}{{
		name:  "their configurations exist, ours are created",
		have:  func() []client.Object { return []client.Object{theirM.DeepCopy(), theirV.DeepCopy()} },
		views: fn,
		wantM: []string{"samplefunctions.v1alpha1.samples.scaleplane.io.cache-operator.scaleplane.io"},
		wantV: []string{"samplefunctions.v1alpha1.samples.scaleplane.io.cache-operator.scaleplane.io", "scale.samplefunctions.v1alpha1.samples.scaleplane.io.cache-operator.scaleplane.io"},
	}, {
		name: "a foreign entry in our configuration is kept; a profile removed goes",
		have: func() []client.Object {
			m, v := Configurations(append(fn, rc...), mine, urlConfig)
			v.Webhooks = append([]admissionregistrationv1.ValidatingWebhook{foreignEntry}, v.Webhooks...)
			return []client.Object{theirM.DeepCopy(), theirV.DeepCopy(), m, v}
		},
		views: fn,
		wantM: []string{"samplefunctions.v1alpha1.samples.scaleplane.io.cache-operator.scaleplane.io"},
		wantV: []string{"policy.example.org", "samplefunctions.v1alpha1.samples.scaleplane.io.cache-operator.scaleplane.io", "scale.samplefunctions.v1alpha1.samples.scaleplane.io.cache-operator.scaleplane.io"},
	}, {
		name: "no profiles left: only our entries go",
		have: func() []client.Object {
			m, v := Configurations(fn, mine, urlConfig)
			v.Webhooks = append(v.Webhooks, foreignEntry)
			return []client.Object{theirM.DeepCopy(), theirV.DeepCopy(), m, v}
		},
		views: nil,
		wantM: []string{},
		wantV: []string{"policy.example.org"},
	}, {
		name: "a configuration of another owner under our name is refused, not written",
		have: func() []client.Object {
			m, v := Configurations(rc, theirs, urlConfig)
			m.Name, v.Name = "cache-operator-mutating-webhook-configuration", "cache-operator-validating-webhook-configuration"
			return []client.Object{theirM.DeepCopy(), theirV.DeepCopy(), m, v}
		},
		views:   fn,
		wantErr: `labelled scaleplane.io/owner=scaleplane, and this process's owner is "cache-operator"`,
	}, {
		name: "an unlabelled configuration from before owners is adopted, its clientConfig kept",
		have: func() []client.Object {
			_, v := Configurations(nil, mine, urlConfig)
			return []client.Object{theirM.DeepCopy(), theirV.DeepCopy(), legacyM.DeepCopy(), v}
		},
		views: rc,
		wantM: []string{"rackedclusters.v1alpha1.samples.scaleplane.io.cache-operator.scaleplane.io"},
		wantV: []string{"rackedclusters.v1alpha1.samples.scaleplane.io.cache-operator.scaleplane.io", "scale.rackedclusters.v1alpha1.samples.scaleplane.io.cache-operator.scaleplane.io"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			have := tc.have()
			c := fakeClient(t, have...)
			before := map[string]client.Object{}
			for _, o := range have {
				if o.GetLabels()["scaleplane.io/owner"] == "scaleplane" {
					got := o.DeepCopyObject().(client.Object)
					if err := c.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
						t.Fatal(err)
					}
					before[o.GetName()] = got
				}
			}
			for range 2 { // a second sync is a no-op
				err := SyncConfigurationsWith(ctx, c, tc.views, mine, urlConfig)
				if tc.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
						t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
					}
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			// The other owner's configurations are exactly as they were.
			for name, want := range before {
				got := want.DeepCopyObject().(client.Object)
				if err := c.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s of another owner changed (-want +got):\n%s", name, diff)
				}
			}
			if tc.wantErr != "" {
				return
			}
			gotM := &admissionregistrationv1.MutatingWebhookConfiguration{}
			gotV := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := c.Get(ctx, client.ObjectKey{Name: "cache-operator-mutating-webhook-configuration"}, gotM); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(ctx, client.ObjectKey{Name: "cache-operator-validating-webhook-configuration"}, gotV); err != nil {
				t.Fatal(err)
			}
			names := func(s []entrySummary) []string {
				out := []string{}
				for _, e := range s {
					out = append(out, e.Name)
				}
				return out
			}
			if diff := cmp.Diff(tc.wantM, names(summarize(gotM.Webhooks))); diff != "" {
				t.Errorf("mutating entries (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantV, names(summarize(gotV.Webhooks))); diff != "" {
				t.Errorf("validating entries (-want +got):\n%s", diff)
			}
			for _, o := range []client.Object{gotM, gotV} {
				if got := o.GetLabels()["scaleplane.io/owner"]; got != "cache-operator" {
					t.Errorf("%s: owner label %q, want cache-operator", o.GetName(), got)
				}
			}
			for _, w := range gotV.Webhooks {
				if w.Name == foreignEntry.Name {
					if diff := cmp.Diff(foreignEntry, w); diff != "" {
						t.Errorf("foreign entry changed (-want +got):\n%s", diff)
					}
				}
			}
			if tc.name == "an unlabelled configuration from before owners is adopted, its clientConfig kept" {
				if got := *gotM.Webhooks[0].FailurePolicy; got != admissionregistrationv1.Fail {
					t.Errorf("adopted entry's failure policy %s, want the configuration's Fail", got)
				}
			}
		})
	}
}

// Configurations renders the entries the binary and the library builder
// write: every entry calls the dispatcher's path of its role and kind, the
// same configurations as DispatchConfigurations, for low-level users of
// Setup too.
func TestConfigurationsCallTheDispatchPaths(t *testing.T) {
	views := testViews(t)
	all := []*profile.Compiled{views[rackedCluster], views[zonedDatabase], views[function]}
	m, v := Configurations(all, ConfigurationOptions{}, urlConfig)
	dm, dv := DispatchConfigurations(all, ConfigurationOptions{}, urlConfig)
	if diff := cmp.Diff(dm, m); diff != "" {
		t.Errorf("mutating configuration (-DispatchConfigurations +Configurations):\n%s", diff)
	}
	if diff := cmp.Diff(dv, v); diff != "" {
		t.Errorf("validating configuration (-DispatchConfigurations +Configurations):\n%s", diff)
	}
	var got, want []string
	for _, view := range all {
		gvr := view.GVR()
		want = append(want, DispatchPath(DispatchMutatePrefix, gvr), DispatchPath(DispatchValidatePrefix, gvr), DispatchPath(DispatchValidateScalePrefix, gvr))
	}
	for i := range m.Webhooks {
		got = append(got, strings.TrimPrefix(*m.Webhooks[i].ClientConfig.URL, "https://127.0.0.1:9443"))
		for _, w := range v.Webhooks[2*i : 2*i+2] {
			got = append(got, strings.TrimPrefix(*w.ClientConfig.URL, "https://127.0.0.1:9443"))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
}

// perKindEntries is what an older release wrote for views: Configurations'
// entries calling the per-kind paths (perkind.go), at the Service ns/svc
// with a CA bundle.
func perKindEntries(views []*profile.Compiled, wc ConfigurationOptions) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	m, v := Configurations(views, wc, func(path string) admissionregistrationv1.WebhookClientConfig {
		cc := ServiceClientConfig("ns", "svc", 443)(path)
		cc.CABundle = []byte("CA")
		return cc
	})
	for i, view := range views {
		gvr := view.GVR()
		m.Webhooks[i].ClientConfig.Service.Path = ptr.To(MutatePath(gvr))
		v.Webhooks[2*i].ClientConfig.Service.Path = ptr.To(ValidatePath(gvr))
		v.Webhooks[2*i+1].ClientConfig.Service.Path = ptr.To(ValidateScalePath(gvr))
	}
	return m, v
}

// TestSyncSetsTheHandlerPath: every sync, SyncConfigurations' and
// SyncConfigurationsWith's as the dispatcher's, moves an entry an older
// release wrote on a per-kind path to the dispatcher's path, keeping its
// Service and CA bundle.
func TestSyncSetsTheHandlerPath(t *testing.T) {
	views := testViews(t)
	fn := []*profile.Compiled{views[function]}
	wc := ConfigurationOptions{}
	syncs := map[string]func(c client.Client) error{
		"SyncConfigurations": func(c client.Client) error { return SyncConfigurations(context.Background(), c, fn, wc) },
		"SyncConfigurationsWith": func(c client.Client) error {
			return SyncConfigurationsWith(context.Background(), c, fn, wc, ServiceClientConfig("ns", "other", 443))
		},
		"SyncDispatchConfigurations": func(c client.Client) error {
			return SyncDispatchConfigurations(context.Background(), c, fn, wc, nil)
		},
	}
	for name, sync := range syncs {
		t.Run(name, func(t *testing.T) {
			m, v := perKindEntries(fn, wc)
			c := fakeClient(t, m, v)
			if err := sync(c); err != nil {
				t.Fatal(err)
			}
			got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := c.Get(context.Background(), client.ObjectKey{Name: v.Name}, got); err != nil {
				t.Fatal(err)
			}
			gotM := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := c.Get(context.Background(), client.ObjectKey{Name: m.Name}, gotM); err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, cc := range append([]admissionregistrationv1.WebhookClientConfig{gotM.Webhooks[0].ClientConfig}, got.Webhooks[0].ClientConfig, got.Webhooks[1].ClientConfig) {
				if cc.Service == nil || cc.Service.Name != "svc" || string(cc.CABundle) != "CA" {
					t.Errorf("clientConfig %+v lost its Service or CA", cc)
					continue
				}
				paths = append(paths, *cc.Service.Path)
			}
			want := []string{"/mutate/samples.scaleplane.io/v1alpha1/samplefunctions", "/validate/samples.scaleplane.io/v1alpha1/samplefunctions", "/validate-scale/samples.scaleplane.io/v1alpha1/samplefunctions"}
			if diff := cmp.Diff(want, paths); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSyncAppliesChangedSettingsToExistingEntries: a configuration change
// (what helm upgrade makes) reaches entries that already exist at the next
// sync: timeout, failure policies, excluded namespaces and selectors are
// the configuration's; the Service and the injected CA stay.
func TestSyncAppliesChangedSettingsToExistingEntries(t *testing.T) {
	views := testViews(t)
	svc := ServiceClientConfig("scaleplane-system", "scaleplane-webhook-service", 443)
	withCA := func(path string) admissionregistrationv1.WebhookClientConfig {
		cc := svc(path)
		cc.CABundle = []byte("CA-from-injector")
		return cc
	}
	oldWC := ConfigurationOptions{}
	one := []*profile.Compiled{views[rackedCluster]}
	haveM, haveV := Configurations(one, oldWC, withCA)
	c := fakeClient(t, haveM, haveV)

	newWC := ConfigurationOptions{
		TimeoutSeconds:     3,
		ExcludedNamespaces: []string{"kube-system", "scaleplane-system"},
		FailurePolicy:      FailurePolicies{Mutate: "Fail", Validate: "Fail", Scale: "Ignore"},
		ObjectSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
	}
	if err := SyncConfigurations(context.Background(), c, one, newWC); err != nil {
		t.Fatal(err)
	}
	gotM := &admissionregistrationv1.MutatingWebhookConfiguration{}
	gotV := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: haveM.Name}, gotM); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), client.ObjectKey{Name: haveV.Name}, gotV); err != nil {
		t.Fatal(err)
	}
	wantM, wantV := Configurations(one, newWC, withCA)
	if diff := cmp.Diff(wantM.Webhooks, gotM.Webhooks); diff != "" {
		t.Errorf("mutating entries (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantV.Webhooks, gotV.Webhooks); diff != "" {
		t.Errorf("validating entries (-want +got):\n%s", diff)
	}
	policies := map[string]admissionregistrationv1.FailurePolicyType{}
	for _, w := range gotV.Webhooks {
		policies[w.Name] = *w.FailurePolicy
		if *w.TimeoutSeconds != 3 {
			t.Errorf("%s: timeout %d, want the new 3", w.Name, *w.TimeoutSeconds)
		}
	}
	want := map[string]admissionregistrationv1.FailurePolicyType{
		"rackedclusters.v1alpha1.samples.scaleplane.io.scaleplane.scaleplane.io":       admissionregistrationv1.Fail,
		"scale.rackedclusters.v1alpha1.samples.scaleplane.io.scaleplane.scaleplane.io": admissionregistrationv1.Ignore,
	}
	if diff := cmp.Diff(want, policies); diff != "" {
		t.Errorf("failure policies (-want +got):\n%s", diff)
	}
}

// TestNamespaceSelectorExclusions: nil excluded namespaces mean
// kube-system; an explicit empty list excludes none, but the break-glass
// label is always honoured.
func TestNamespaceSelectorExclusions(t *testing.T) {
	breakGlass := metav1.LabelSelectorRequirement{Key: "scaleplane.io/admission", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"disabled"}}
	for _, tc := range []struct {
		name string
		wc   ConfigurationOptions
		want *metav1.LabelSelector
	}{
		{"default", ConfigurationOptions{}, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system"}}, breakGlass}}},
		{"none excluded", ConfigurationOptions{ExcludedNamespaces: []string{}}, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{breakGlass}}},
		{"user's expression kept first", ConfigurationOptions{
			ExcludedNamespaces: []string{"ops"},
			NamespaceSelector:  &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod"}}}},
		}, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod"}},
			{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"ops"}}, breakGlass}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.wc.NamespaceSelector.DeepCopy()
			if diff := cmp.Diff(tc.want, NamespaceSelector(tc.wc)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.wc.NamespaceSelector); diff != "" {
				t.Errorf("the configuration's own selector was changed (-before +after):\n%s", diff)
			}
		})
	}
}
