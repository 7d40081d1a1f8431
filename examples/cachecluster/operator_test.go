package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/controlplane"
	"github.com/scaleplane/scaleplane/profile"

	cachev1 "github.com/scaleplane/scaleplane/examples/cachecluster/api/v1"
	"github.com/scaleplane/scaleplane/examples/cachecluster/operator"
)

// The example operator's test runs from its own module, as an operator
// author's would: the real control plane from KUBEBUILDER_ASSETS (make
// test points it at the programs `make tools` builds), this module's CRDs
// and scaleplane's sample CRDs (for the binary beside it).

var cluster *controlplane.Cluster

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := cachev1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	c, err := controlplane.Start(ctx, controlplane.Options{
		CRDPaths: []string{"config/crd", filepath.Join("..", "..", "config", "samples", "crd")},
		Scheme:   scheme,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "cache-operator test: %v\n", err)
		return 1
	}
	cluster = c
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "cache-operator test: %v\n", err)
		}
	}()
	return m.Run()
}

// operatorProcess is the cache operator as main runs it, on a loopback
// webhook port, with the trigger autoscaler.
type operatorProcess struct {
	port   int
	cancel context.CancelFunc
	done   chan error
}

func startOperator(t *testing.T, port int) *operatorProcess {
	t.Helper()
	skip := true
	mgr, err := ctrl.NewManager(cluster.Config, ctrl.Options{
		Scheme:                 cluster.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// The test restarts the operator in one process.
		Controller:    config.Controller{SkipNameValidation: &skip},
		WebhookServer: webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: cluster.WebhookCertDir}),
	})
	if err != nil {
		t.Fatal(err)
	}
	as, err := autoscaler.NewWithMetrics(mgr, autoscaler.MetricsOptions{Owner: operator.Owner, PollingInterval: time.Second, ScrapeInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	base := "https://127.0.0.1:" + strconv.Itoa(port)
	if err := operator.Setup(mgr, operator.Options{
		ClientConfig: func(path string) admissionregistrationv1.WebhookClientConfig {
			return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + path), CABundle: cluster.CAData}
		},
		Autoscaler: as,
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &operatorProcess{port: port, cancel: cancel, done: make(chan error, 1)}
	go func() { p.done <- mgr.Start(ctx) }()
	t.Cleanup(p.stop)
	return p
}

func (p *operatorProcess) stop() {
	if p.cancel != nil {
		p.cancel()
		<-p.done
		p.cancel = nil
	}
}

// startBinary runs the scaleplane binary's own wiring beside the operator,
// with its sample profiles and its own webhook configurations.
func startBinary(t *testing.T) {
	t.Helper()
	cfg := profile.SampleConfiguration()
	port := freePort(t)
	cfg.Webhook.Host, cfg.Webhook.Port = "127.0.0.1", port
	cfg.Webhook.CertDir = filepath.Join(t.TempDir(), "certs")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "scaleplane-system"}}
	if err := cluster.Client.Create(context.Background(), ns); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	a, err := app.New(app.Options{
		Config:      cfg,
		RestConfig:  cluster.Config,
		CertMode:    app.CertSelfSigned,
		Namespace:   ns.Name,
		WebhookURL:  "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		WebhookIPs:  []string{"127.0.0.1"},
		MetricsAddr: "0",
		ProbeAddr:   "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("scaleplane: %v", err)
		}
	})
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// eventually polls cond every 100 ms until it holds or the deadline.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	last := ""
	for {
		ok, msg := cond(ctx)
		if ok {
			return
		}
		last = msg
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within 60 s: %s", what, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cache-"}}
	if err := cluster.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), ns) })
	return ns.Name
}

// webhookEntries are the entry names of owner's two configurations.
func webhookEntries(ctx context.Context, owner string) ([]string, error) {
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := cluster.Client.Get(ctx, client.ObjectKey{Name: owner + "-mutating-webhook-configuration"}, m); err != nil {
		return nil, err
	}
	if err := cluster.Client.Get(ctx, client.ObjectKey{Name: owner + "-validating-webhook-configuration"}, v); err != nil {
		return nil, err
	}
	var out []string
	for _, w := range m.Webhooks {
		out = append(out, w.Name)
	}
	for _, w := range v.Webhooks {
		out = append(out, w.Name)
	}
	slices.Sort(out)
	return out, nil
}

func shardMembers(cc *cachev1.CacheCluster) []int32 {
	var out []int32
	for _, s := range cc.Spec.Shards {
		out = append(out, s.Members)
	}
	return out
}

// TestTwoKindsTriggersAndTheBinaryBeside is the example's
// proof: two kinds set up separately on one manager (a CacheCluster fanned
// out to its shards, a CacheProxy), defaulting and /scale through the real
// API server, a PromQL trigger scaling a CacheCluster, and the scaleplane
// binary running beside the operator, neither removing the other's
// webhooks, also across a restart of the operator.
func TestTwoKindsTriggersAndTheBinaryBeside(t *testing.T) {
	c := cluster.Client
	port := freePort(t)
	op := startOperator(t, port)
	startBinary(t)
	ctx := context.Background()

	ours := []string{
		"cacheclusters.v1.cache.example.com." + operator.Owner + ".scaleplane.io",
		"cacheproxies.v1.cache.example.com." + operator.Owner + ".scaleplane.io",
	}
	bothOwners := func(ctx context.Context) (bool, string) {
		mine, err := webhookEntries(ctx, operator.Owner)
		if err != nil {
			return false, err.Error()
		}
		theirs, err := webhookEntries(ctx, "scaleplane")
		if err != nil {
			return false, err.Error()
		}
		for _, name := range ours {
			if !slices.ContainsFunc(mine, func(e string) bool { return strings.HasSuffix(e, name) }) {
				return false, fmt.Sprintf("the operator's entries %v lack %s", mine, name)
			}
		}
		if len(theirs) == 0 || slices.ContainsFunc(theirs, func(e string) bool { return strings.Contains(e, "cache.example.com") }) {
			return false, fmt.Sprintf("the binary's entries: %v", theirs)
		}
		return true, ""
	}
	eventually(t, "both owners' webhook configurations", bothOwners)

	ns := namespace(t)
	// A CacheCluster with two shards: defaulted (min = max = replicas) and
	// fanned out to both shards by the mutating webhook.
	cc := &cachev1.CacheCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sessions"},
		Spec:       cachev1.CacheClusterSpec{Replicas: ptr.To[int32](2), Shards: []cachev1.Shard{{Name: "a"}, {Name: "b"}}},
	}
	if err := c.Create(ctx, cc); err != nil {
		t.Fatalf("create CacheCluster: %v", err)
	}
	if got := shardMembers(cc); !slices.Equal(got, []int32{2, 2}) {
		t.Errorf("shards after create: %v, want [2 2]", got)
	}
	if a := cc.Spec.Autoscaling; a == nil || ptr.Deref(a.MinReplicas, -1) != 2 || ptr.Deref(a.MaxReplicas, -1) != 2 {
		t.Errorf("autoscaling after create: %+v, want min = max = 2", a)
	}
	// kubectl scale's write, through /scale: the shards follow, and
	// status.replicas appears once both report their members ready.
	// (A merge patch, as kubectl scale sends: no resourceVersion to race
	// the operator's status writes.)
	scale := &autoscalingv1.Scale{}
	if err := c.SubResource("scale").Patch(ctx, cc, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`)), client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("scale to 3: %v", err)
	}
	eventually(t, "shards at 3 and status.replicas 3", func(ctx context.Context) (bool, string) {
		got := &cachev1.CacheCluster{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cc), got); err != nil {
			return false, err.Error()
		}
		return slices.Equal(shardMembers(got), []int32{3, 3}) && got.Status.Replicas == 3,
			fmt.Sprintf("shards %v, status.replicas %d", shardMembers(got), got.Status.Replicas)
	})

	// A trigger: vector(25) against 10 per replica asks for 3, from 1.
	trig := &cachev1.CacheCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "queue"},
		Spec: cachev1.CacheClusterSpec{Replicas: ptr.To[int32](1), Shards: []cachev1.Shard{{Name: "a"}}, Autoscaling: &v1alpha1.TriggerAutoscaling{
			Autoscaling: v1alpha1.Autoscaling{MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](6)},
			Triggers:    []v1alpha1.Trigger{{Name: "backlog", Type: "AverageValue", Query: "vector(25)", Threshold: resource.MustParse("10")}},
		}},
	}
	if err := c.Create(ctx, trig); err != nil {
		t.Fatalf("create a CacheCluster with a trigger: %v", err)
	}
	eventually(t, "the trigger scales the CacheCluster to 3", func(ctx context.Context) (bool, string) {
		got := &cachev1.CacheCluster{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(trig), got); err != nil {
			return false, err.Error()
		}
		return ptr.Deref(got.Spec.Replicas, 0) == 3 && slices.Equal(shardMembers(got), []int32{3}),
			fmt.Sprintf("replicas %d, shards %v", ptr.Deref(got.Spec.Replicas, 0), shardMembers(got))
	})

	// The second kind, set up separately on the same manager.
	px := &cachev1.CacheProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "front"}, Spec: cachev1.CacheProxySpec{Replicas: ptr.To[int32](4)}}
	if err := c.Create(ctx, px); err != nil {
		t.Fatalf("create CacheProxy: %v", err)
	}
	if a := px.Spec.Autoscaling; a == nil || ptr.Deref(a.MinReplicas, -1) != 4 || ptr.Deref(a.MaxReplicas, -1) != 4 {
		t.Errorf("CacheProxy autoscaling after create: %+v, want min = max = 4", a)
	}
	// Its admission is scaleplane's: a range over maxReplicas is refused
	// with the field path.
	bad := &cachev1.CacheProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"}, Spec: cachev1.CacheProxySpec{Replicas: ptr.To[int32](2),
		Autoscaling: &v1alpha1.Autoscaling{MinReplicas: ptr.To[int32](5), MaxReplicas: ptr.To[int32](3)}}}
	if err := c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "spec.autoscaling.minReplicas") {
		t.Errorf("min over max: got %v, want a refusal naming spec.autoscaling.minReplicas", err)
	}

	// Restart the operator: the binary's configurations stay, and the
	// operator's come back whole.
	op.stop()
	startOperator(t, port)
	eventually(t, "both owners' webhook configurations after the operator's restart", bothOwners)
	// The binary's own kind is still admitted by the binary.
	rc := sampleRackedCluster(ns)
	if err := c.Create(ctx, rc); err != nil {
		t.Fatalf("create a RackedCluster (the binary's kind): %v", err)
	}
	if members, _, _ := unstructured.NestedSlice(rc.Object, "spec", "racks"); len(members) != 1 || members[0].(map[string]any)["members"] != int64(2) {
		t.Errorf("the binary's RackedCluster racks after create: %v, want one rack of 2 (its mutating webhook)", members)
	}
}

// sampleRackedCluster is an object of the binary's sample kind, which only
// the binary's webhooks default.
func sampleRackedCluster(ns string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": profile.SampleAPIVersion, "kind": "RackedCluster",
		"metadata": map[string]any{"namespace": ns, "name": "db"},
		"spec":     map[string]any{"replicas": int64(2), "racks": []any{map[string]any{"name": "r1"}}},
	}}
	return u
}
