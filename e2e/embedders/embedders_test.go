package embedders

import (
	"context"
	"fmt"
	"github.com/scaleplane/scaleplane/webhooks"
	"k8s.io/apimachinery/pkg/runtime"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/scaleplane/scaleplane"
	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/promql"
)

var (
	functionGVK    = schema.GroupVersionKind{Group: "samples.scaleplane.io", Version: "v1alpha1", Kind: "Function"}
	workerGroupGVK = schema.GroupVersionKind{Group: "samples.scaleplane.io", Version: "v1alpha1", Kind: "WorkerGroup"}
)

// embedder is one operator embedding scaleplane: its own manager, webhook
// server (its own port) and owner.
type embedder struct {
	owner string
	kinds []schema.GroupVersionKind
	// autoscaler, when set, is given to every kind (WithAutoscaler).
	autoscaler *autoscaler.Autoscaler
	// port stays across restarts, as an operator's webhook Service does:
	// the sync keeps an existing entry's clientConfig.
	port   int
	cancel context.CancelFunc
	done   chan error
}

// sampleProfile is the sample profile of gvk with what the builder
// resolves from the cluster left out: target resource and the /scale paths.
func sampleProfile(t *testing.T, gvk schema.GroupVersionKind) v1alpha1.ScaleProfileSpec {
	t.Helper()
	for _, p := range profile.Samples() {
		if p.Target.Kind == gvk.Kind {
			p.Target = v1alpha1.TargetKind{}
			p.ReplicasPath, p.Status.ReplicasPath, p.Status.SelectorPath = "", "", ""
			return p
		}
	}
	t.Fatalf("no sample profile of %s", gvk.Kind)
	return v1alpha1.ScaleProfileSpec{}
}

// start runs the embedder as its operator would: a plain manager (no
// Cache.Unstructured), scaleplane.New, one For(...).Complete() per kind.
func (e *embedder) start(t *testing.T) {
	t.Helper()
	if e.port == 0 {
		e.port = framework.FreePort(t)
	}
	port := e.port
	skip := true
	mgr, err := ctrl.NewManager(cluster.Config, ctrl.Options{
		Scheme:                 cluster.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Several managers (and a restarted one) in one test process.
		Controller:    config.Controller{SkipNameValidation: &skip},
		WebhookServer: webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: cluster.WebhookCertDir}),
	})
	if err != nil {
		t.Fatal(err)
	}
	base := "https://127.0.0.1:" + strconv.Itoa(port)
	sp, err := scaleplane.New(mgr, scaleplane.Options{
		Owner: e.owner,
		ClientConfig: func(path string) admissionregistrationv1.WebhookClientConfig {
			return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + path), CABundle: cluster.CAData}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, gvk := range e.kinds {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		b := sp.For(obj).WithProfile(sampleProfile(t, gvk))
		if e.autoscaler != nil {
			b = b.WithAutoscaler(e.autoscaler)
		}
		if err := b.Complete(); err != nil {
			t.Fatalf("%s: set up %s: %v", e.owner, gvk.Kind, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan error, 1)
	go func() { e.done <- mgr.Start(ctx) }()
	t.Cleanup(e.stop)
}

func (e *embedder) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	if err := <-e.done; err != nil {
		fmt.Fprintf(os.Stderr, "embedders: %s stopped with: %v\n", e.owner, err)
	}
	e.cancel = nil
}

// entries are the webhook entry names of both configurations of owner, nil
// while either is missing.
func entries(ctx context.Context, owner string) ([]string, error) {
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := cluster.Client.Get(ctx, client.ObjectKey{Name: owner + "-mutating-webhook-configuration"}, m); err != nil {
		return nil, err
	}
	if err := cluster.Client.Get(ctx, client.ObjectKey{Name: owner + "-validating-webhook-configuration"}, v); err != nil {
		return nil, err
	}
	if m.Labels[v1alpha1.LabelOwner] != owner || v.Labels[v1alpha1.LabelOwner] != owner {
		return nil, fmt.Errorf("%s's configurations are labelled %q and %q", owner, m.Labels[v1alpha1.LabelOwner], v.Labels[v1alpha1.LabelOwner])
	}
	var out []string
	for _, w := range m.Webhooks {
		out = append(out, "mutating "+w.Name)
	}
	for _, w := range v.Webhooks {
		out = append(out, "validating "+w.Name)
	}
	slices.Sort(out)
	return out, nil
}

// wantEntries are the entries owner must have for kinds.
func wantEntries(owner string, resources ...string) []string {
	var out []string
	for _, r := range resources {
		name := r + ".v1alpha1.samples.scaleplane.io." + owner + ".scaleplane.io"
		out = append(out, "mutating "+name, "validating "+name, "validating scale."+name)
	}
	slices.Sort(out)
	return out
}

// refusedBy creates obj (dry run) and reports whether the webhook entry
// named entry refused it.
func refusedBy(ctx context.Context, obj *unstructured.Unstructured, entry string) (bool, string) {
	err := cluster.Client.Create(ctx, obj, client.DryRunAll)
	if err == nil {
		return false, "created: no webhook refused it yet"
	}
	return apierrors.IsInvalid(err) && strings.Contains(err.Error(), `admission webhook "`+entry+`" denied the request`), err.Error()
}

// removeConfigurations deletes owners' webhook configurations when the test
// ends: fail-closed webhooks whose servers are gone would refuse the next
// test's writes.
func removeConfigurations(t *testing.T, owners ...string) {
	t.Cleanup(func() {
		for _, owner := range owners {
			_ = cluster.Client.Delete(context.Background(), &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: owner + "-mutating-webhook-configuration"}})
			_ = cluster.Client.Delete(context.Background(), &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: owner + "-validating-webhook-configuration"}})
		}
	})
}

// withTrigger is a WorkerGroup whose scale policy has a PromQL trigger.
func withTrigger(ns string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"replicas": int64(1),
		"scalePolicy": map[string]any{"minReplicas": int64(0), "maxReplicas": int64(5), "triggers": []any{
			map[string]any{"name": "queue", "type": "Value", "query": `max(queue_depth{namespace="${namespace}"})`, "threshold": int64(100)},
		}},
	}}}
	u.SetGroupVersionKind(workerGroupGVK)
	u.SetNamespace(ns)
	u.SetName("with-trigger")
	return u
}

func overMax(ns string, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(1001)}}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName("over-max")
	return u
}

// TestTwoEmbeddersOneCluster: two operators embedding
// scaleplane (each with a kind of its own, and one kind both profile) keep
// each other's webhook configurations and entries through their start-ups
// and a restart, and each one's webhooks judge its kinds.
func TestTwoEmbeddersOneCluster(t *testing.T) {
	ns := cluster.Namespace(t)
	cache := &embedder{owner: "cache-operator", kinds: []schema.GroupVersionKind{framework.RackedClusterGVK, workerGroupGVK}}
	fn := &embedder{owner: "function-operator", kinds: []schema.GroupVersionKind{functionGVK, workerGroupGVK}}
	// Registered first, so it runs after the managers stopped (cleanups run
	// last first): a sync still running could create them again.
	removeConfigurations(t, cache.owner, fn.owner)
	cache.start(t)
	fn.start(t)

	want := map[string][]string{
		cache.owner: wantEntries(cache.owner, "rackedclusters", "workergroups"),
		fn.owner:    wantEntries(fn.owner, "samplefunctions", "workergroups"),
	}
	inLine := func(ctx context.Context) (bool, string) {
		for owner, w := range want {
			got, err := entries(ctx, owner)
			if err != nil {
				return false, err.Error()
			}
			if !slices.Equal(w, got) {
				return false, fmt.Sprintf("%s's entries %v, want %v", owner, got, w)
			}
		}
		return true, ""
	}
	framework.Eventually(t, 0, inLine)

	// Each owner's webhooks answer for its kinds; the shared kind goes
	// through both.
	cacheEntry := "rackedclusters.v1alpha1.samples.scaleplane.io.cache-operator.scaleplane.io"
	fnEntry := "samplefunctions.v1alpha1.samples.scaleplane.io.function-operator.scaleplane.io"
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		return refusedBy(ctx, overMax(ns, framework.RackedClusterGVK), cacheEntry)
	})
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		return refusedBy(ctx, overMax(ns, functionGVK), fnEntry)
	})
	// The test helper's wait: a dry-run create comes back mutated (racks
	// fanned out to spec.replicas by the cache operator's webhook).
	err := cluster.WaitForWebhooks(context.Background(), framework.RackedCluster(ns, "mutated", 3, 1, 2, 4), func(o client.Object) bool {
		m, err := framework.RackMembers(o.(*unstructured.Unstructured))
		return err == nil && slices.Equal(m, []int64{3, 3, 3})
	})
	if err != nil {
		t.Fatal(err)
	}

	// Neither runs a trigger autoscaler, so a trigger is refused, saying so.
	err = cluster.Client.Create(context.Background(), withTrigger(ns), client.DryRunAll)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "has no trigger autoscaler") {
		t.Errorf("a trigger without an autoscaler: %v, want a refusal that says no trigger autoscaler runs", err)
	}

	// The function operator's configurations are not written again when
	// the cache operator restarts.
	rv := func(ctx context.Context, name string) string {
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Name: name}, v); err != nil {
			t.Fatal(err)
		}
		return v.ResourceVersion
	}
	fnRV := rv(context.Background(), fn.owner+"-validating-webhook-configuration")
	// Someone else's entry in the cache operator's configuration (a policy
	// webhook an administrator added) is not the cache operator's to drop.
	foreign := admissionregistrationv1.ValidatingWebhook{
		Name:                    "policy.example.org",
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/policy"), CABundle: cluster.CAData},
		Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"example.org"}, APIVersions: []string{"v1"}, Resources: []string{"nothing"}}}},
		FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
	}
	cacheV := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := cluster.Client.Get(context.Background(), client.ObjectKey{Name: cache.owner + "-validating-webhook-configuration"}, cacheV); err != nil {
		t.Fatal(err)
	}
	// And one of its own entries lost, so that the restarted sync has
	// something to do: seeing it back proves the sync ran.
	cacheV.Webhooks = slices.DeleteFunc(cacheV.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
		return strings.HasPrefix(w.Name, "scale.workergroups.")
	})
	cacheV.Webhooks = append(cacheV.Webhooks, foreign)
	if err := cluster.Client.Update(context.Background(), cacheV); err != nil {
		t.Fatal(err)
	}
	want[cache.owner] = append(want[cache.owner], "validating "+foreign.Name)
	slices.Sort(want[cache.owner])
	cache.stop()
	cache.start(t)
	framework.Eventually(t, 0, inLine)
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		return refusedBy(ctx, overMax(ns, framework.RackedClusterGVK), cacheEntry)
	})
	if got := rv(context.Background(), fn.owner+"-validating-webhook-configuration"); got != fnRV {
		t.Errorf("the cache operator's restart wrote the function operator's configuration (resourceVersion %s -> %s)", fnRV, got)
	}
	ok, msg := refusedBy(context.Background(), overMax(ns, functionGVK), fnEntry)
	if !ok {
		t.Errorf("after the cache operator's restart the function operator's webhook no longer judges Functions: %s", msg)
	}
}

// TestBuilderErrors: the builder says what to change.
func TestBuilderErrors(t *testing.T) {
	mgr, err := ctrl.NewManager(cluster.Config, ctrl.Options{
		Scheme: cluster.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{Port: 1}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scaleplane.New(mgr, scaleplane.Options{}); err == nil || !strings.Contains(err.Error(), "Options.Owner is required") {
		t.Errorf("no owner: %v", err)
	}
	sp, err := scaleplane.New(mgr, scaleplane.Options{Owner: "errors"})
	if err != nil {
		t.Fatal(err)
	}
	unserved := &unstructured.Unstructured{}
	unserved.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.org", Version: "v1", Kind: "Missing"})
	tests := []struct {
		name string
		b    *scaleplane.Builder
		want string
	}{
		{"no profile", sp.For(unserved), "WithProfile(spec) is required"},
		{"kind not served", sp.For(unserved).WithProfile(sampleProfile(t, functionGVK)), "the API server does not serve example.org/v1, Kind=Missing"},
		{"wrong resource", sp.For(overMax("x", functionGVK)).WithProfile(func() v1alpha1.ScaleProfileSpec {
			p := sampleProfile(t, functionGVK)
			p.Target.Resource = "funcs"
			return p
		}()), `the API server calls Function "samplefunctions"; leave resource out`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.b.Complete()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
	if err := sp.For(overMax("x", functionGVK)).WithProfile(sampleProfile(t, functionGVK)).Complete(); err != nil {
		t.Fatal(err)
	}
	err = sp.For(overMax("x", functionGVK)).WithProfile(sampleProfile(t, functionGVK)).Complete()
	if err == nil || !strings.Contains(err.Error(), "set up each kind once") {
		t.Errorf("a kind twice: %v", err)
	}
}

// TestWithAutoscaler: with WithAutoscaler the kind's triggers
// are admitted against the autoscaler's sources, and one autoscaler serves
// every kind of a manager.
func TestWithAutoscaler(t *testing.T) {
	limits := promql.Limits{}
	sources, err := autoscaler.NewSources(promql.NewEvaluator(promql.NewStore(promql.Options{}), promql.EvaluatorOptions{Limits: limits}), nil, limits)
	if err != nil {
		t.Fatal(err)
	}
	as, err := autoscaler.New(autoscaler.Options{Sources: sources, Owner: "trigger-operator"})
	if err != nil {
		t.Fatal(err)
	}
	var _ scaleplane.Autoscaler = as
	e := &embedder{owner: "trigger-operator", kinds: []schema.GroupVersionKind{workerGroupGVK, functionGVK}, autoscaler: as}
	removeConfigurations(t, e.owner)
	e.start(t)
	ns := cluster.Namespace(t)
	// Through the webhooks first: without them anything is admitted.
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		return refusedBy(ctx, overMax(ns, workerGroupGVK), "workergroups.v1alpha1.samples.scaleplane.io.trigger-operator.scaleplane.io")
	})
	framework.Eventually(t, 0, func(ctx context.Context) (bool, string) {
		u := withTrigger(ns)
		if err := cluster.Client.Create(ctx, u, client.DryRunAll); err != nil {
			return false, fmt.Sprintf("dry-run create with a trigger: %v", err)
		}
		return true, ""
	})
}

// startManager runs mgr until the test ends, failing the test if it stops
// with an error, and returns the context it runs under.
func startManager(t *testing.T, mgr manager.Manager) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return ctx
}

// dispatchManager is a manager with mgrScheme and a webhook server on
// 127.0.0.1:port, the webhooks' dispatcher registered on it, and a client
// with liveScheme that reads past any cache: what the ScaleProfile tests
// wire the reconciler to.
func dispatchManager(t *testing.T, mgrScheme, liveScheme *runtime.Scheme, port int) (manager.Manager, *webhooks.Dispatcher, client.Client) {
	t.Helper()
	mgr, err := ctrl.NewManager(cluster.Config, ctrl.Options{
		Scheme:                 mgrScheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: cluster.WebhookCertDir}),
	})
	if err != nil {
		t.Fatal(err)
	}
	d, err := webhooks.NewDispatcher(mgr, webhooks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	live, err := client.New(cluster.Config, client.Options{Scheme: liveScheme})
	if err != nil {
		t.Fatal(err)
	}
	return mgr, d, live
}

// TestBuilderReadsTheServedSchema: a library type's kind is held to its
// CRD's served schema like a kind of the binary (M7, S2): Complete reads
// the CRD and its view carries the limits of every field scaleplane
// writes.
func TestBuilderReadsTheServedSchema(t *testing.T) {
	mgr, err := ctrl.NewManager(cluster.Config, ctrl.Options{
		Scheme: cluster.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{Port: 1}),
	})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := scaleplane.New(mgr, scaleplane.Options{Owner: "schema"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.For(overMax("x", functionGVK)).WithProfile(sampleProfile(t, functionGVK)).Complete(); err != nil {
		t.Fatal(err)
	}
	views := sp.Views()
	if len(views) != 1 || !views[0].Layout().Schema.Replicas.Known {
		t.Fatalf("views %d, replicas limits %+v: want the CRD's schema of spec.replicas", len(views), views[0].Layout().Schema.Replicas)
	}
}
