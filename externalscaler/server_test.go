package externalscaler

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/externalscaler/pb"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/promql"
	"github.com/scaleplane/scaleplane/scaling"
)

// scaledObjects is a client.Reader holding ScaledObjects by namespace/name.
type scaledObjects struct {
	mu sync.Mutex
	m  map[string]*unstructured.Unstructured
}

func (r *scaledObjects) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	so, ok := r.m[key.String()]
	if !ok {
		return apierrors.NewNotFound(controllers.ScaledObjectGVK.GroupVersion().WithResource("scaledobjects").GroupResource(), key.Name)
	}
	so.DeepCopyInto(obj.(*unstructured.Unstructured))
	return nil
}

func (r *scaledObjects) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return fmt.Errorf("not used")
}

// declare adds a trigger of type typ with metadata md to the ScaledObject
// namespace/name, as its owner would write it.
func (r *scaledObjects) declare(namespace, name, typ string, md map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	so := r.m[namespace+"/"+name]
	m := map[string]any{}
	for k, v := range md {
		m[k] = v
	}
	triggers, _, _ := unstructured.NestedSlice(so.Object, "spec", "triggers")
	triggers = append(triggers, map[string]any{"type": typ, "metadata": m})
	if err := unstructured.SetNestedSlice(so.Object, triggers, "spec", "triggers"); err != nil {
		panic(err)
	}
}

func (r *scaledObjects) put(so *unstructured.Unstructured) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[so.GetNamespace()+"/"+so.GetName()] = so
}

func (r *scaledObjects) delete(namespace, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, namespace+"/"+name)
}

func scaledObject(ns, name, apiVersion, kind, target string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"scaleTargetRef": map[string]any{"apiVersion": apiVersion, "kind": kind, "name": target},
	}}}
	u.SetGroupVersionKind(controllers.ScaledObjectGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// values is a scaling.MetricSource answering each expanded query from a
// table; a query it does not know has no data.
type values struct {
	mu   sync.Mutex
	v    map[string]float64
	seen []string
}

func (s *values) Eval(_ context.Context, query string, _ time.Time, vars map[string]string) (float64, bool, error) {
	// As the embedded evaluator: placeholders are the source's to expand.
	query, err := promql.Expand(query, vars)
	if err != nil {
		return 0, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, query)
	v, ok := s.v[query]
	return v, ok, nil
}

func (s *values) set(q string, v float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.v[q] = v
}

// querySources are the app's trigger sources with only the embedded store
// configured, its queries answered by m: the "promql" source checks
// queries as the autoscaler's does.
func querySources(t testing.TB, m scaling.MetricSource) *scaling.Sources {
	t.Helper()
	src := autoscaler.QuerySource(nil, promql.NewTriggerChecker(promql.Limits{}.WithDefaults()))
	src.New = scaling.QueryScaler(m)
	s := scaling.NewSources()
	if err := s.Register(scaling.SourcePromQL, src); err != nil {
		t.Fatal(err)
	}
	return s
}

type fixture struct {
	srv     *Server
	objects *scaledObjects
	client  pb.ExternalScalerClient
	values  *values
	now     time.Time

	mu sync.Mutex
	// queries are the store's requests by owner.
	queries map[string][]string
}

// requested lists every query the store is asked to keep.
func (f *fixture) requested() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, qs := range f.queries {
		out = append(out, qs...)
	}
	slices.Sort(out)
	return out
}

func newFixture(t testing.TB, mut func(*Options)) *fixture {
	t.Helper()
	f := &fixture{values: &values{v: map[string]float64{}}, now: time.Unix(1_800_000_000, 0), queries: map[string][]string{}}
	f.objects = &scaledObjects{m: map[string]*unstructured.Unstructured{
		"shop/web":    scaledObject("shop", "web", "samples.scaleplane.io/v1alpha1", "RackedCluster", "cart"),
		"shop/deploy": scaledObject("shop", "deploy", "apps/v1", "Deployment", "api"),
	}}
	views := []*profile.Compiled{}
	for _, p := range profile.Samples() {
		v, err := profile.Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		views = append(views, v)
	}
	opts := Options{
		// As the app's sources: only the embedded store is configured.
		Sources: querySources(t, f.values),
		Reader:  f.objects,
		Targets: TargetsFunc(autoscaler.ScrapeWorkload),
		Views:   views,
		Request: func(owner string, qs ...string) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(qs) == 0 {
				delete(f.queries, owner)
			} else {
				f.queries[owner] = qs
			}
			return nil
		},
		StreamInterval: 10 * time.Millisecond,
		Now:            func() time.Time { return f.now },
	}
	if mut != nil {
		mut(&opts)
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	f.client = serve(t, srv, nil, insecure.NewCredentials())
	return f
}

// serve runs srv on 127.0.0.1 until the test ends and returns a client.
func serve(t testing.TB, srv *Server, serverCreds, clientCreds credentials.TransportCredentials) pb.ExternalScalerClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis, serverCreds) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(clientCreds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Serve did not return after its context ended")
		}
	})
	return pb.NewExternalScalerClient(conn)
}

func ref(name string, md map[string]string) *pb.ScaledObjectRef {
	return &pb.ScaledObjectRef{Namespace: "shop", Name: name, ScalerMetadata: md}
}

// declared is ref after the ScaledObject shop/name declares a trigger of
// type external with metadata md.
func (f *fixture) declared(name string, md map[string]string) *pb.ScaledObjectRef {
	f.objects.declare("shop", name, "external", md)
	return ref(name, md)
}

func code(err error) codes.Code { return status.Code(err) }

// KEDA's four calls answered from a trigger, with the
// placeholders of a workload trigger, KEDA's activation rule, and no data
// as an error (KEDA keeps the count), never zero.
func TestAnswers(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	md := map[string]string{"query": rps, "threshold": "10", "activationThreshold": "5", "scalerAddress": "127.0.0.1:1"}
	// Expanded, and kept to the ScaledObject's namespace (the matcher the
	// query has already is not repeated).
	expanded := `sum(rate(http_requests_total{job="cart",namespace="shop"}[1m]))`
	f.objects.declare("shop", "web", "external", md)

	spec, err := f.client.GetMetricSpec(ctx, ref("web", md))
	if err != nil {
		t.Fatal(err)
	}
	want := &pb.GetMetricSpecResponse{MetricSpecs: []*pb.MetricSpec{{MetricName: "scaleplane", TargetSize: 10, TargetSizeFloat: 10}}}
	if diff := cmp.Diff(want, spec, protocmp.Transform()); diff != "" {
		t.Errorf("GetMetricSpec (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{expanded}, f.requested()); diff != "" {
		t.Errorf("queries handed to the store (-want +got):\n%s", diff)
	}

	// No data: an error, not zero, not inactive.
	if _, err := f.client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: ref("web", md), MetricName: "scaleplane"}); code(err) != codes.Unavailable {
		t.Errorf("GetMetrics without data: %v, want Unavailable", err)
	}
	if _, err := f.client.IsActive(ctx, ref("web", md)); code(err) != codes.Unavailable {
		t.Errorf("IsActive without data: %v, want Unavailable", err)
	}

	for _, tc := range []struct {
		value  float64
		active bool
	}{{0, false}, {5, false}, {5.5, true}, {42.4, true}} {
		f.values.set(expanded, tc.value)
		m, err := f.client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: ref("web", md), MetricName: "scaleplane"})
		if err != nil {
			t.Fatal(err)
		}
		want := &pb.GetMetricsResponse{MetricValues: []*pb.MetricValue{{MetricName: "scaleplane", MetricValue: int64(tc.value + 0.5), MetricValueFloat: tc.value}}}
		if diff := cmp.Diff(want, m, protocmp.Transform()); diff != "" {
			t.Errorf("GetMetrics at %v (-want +got):\n%s", tc.value, diff)
		}
		a, err := f.client.IsActive(ctx, ref("web", md))
		if err != nil {
			t.Fatal(err)
		}
		if a.Result != tc.active {
			t.Errorf("IsActive at %v with activationThreshold 5: %v, want %v", tc.value, a.Result, tc.active)
		}
	}

	// The pods of the target are scraped as a workload trigger's are.
	got := f.srv.ScrapeWorkloads()
	if len(got) != 1 {
		t.Fatalf("scrape workloads: %+v, want the RackedCluster's", got)
	}
	if got[0].Namespace != "shop" || got[0].Selector.String() != "samples.scaleplane.io/cluster=cart" || got[0].Labels["job"] != "cart" || got[0].Labels["workload_kind"] != "RackedCluster" {
		t.Errorf("scrape workload %+v %s", got[0], got[0].Selector)
	}
}

// Bad input gets a status that says what to change, and builds nothing.
func TestRefusals(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	ok := map[string]string{"query": "vector(1)", "threshold": "1"}
	f.objects.declare("shop", "deploy", "external", ok)
	cases := []struct {
		name string
		ref  *pb.ScaledObjectRef
		code codes.Code
		says string
	}{
		{"no name", &pb.ScaledObjectRef{Namespace: "shop", ScalerMetadata: ok}, codes.InvalidArgument, "needs a name and a namespace"},
		{"bad metadata", f.declared("web", map[string]string{"query": "vector(1)"}), codes.InvalidArgument, "metadata.threshold: Required value"},
		{"no such ScaledObject", ref("nope", ok), codes.NotFound, "ScaledObject shop/nope does not exist or has no trigger"},
		{"a Deployment without podSelector", ref("deploy", ok), codes.FailedPrecondition, "set metadata.podSelector"},
		{"a source not configured", f.declared("web", map[string]string{"query": "vector(1)", "threshold": "1", "source": "prometheus"}), codes.FailedPrecondition, `unknown trigger source "prometheus"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.client.GetMetricSpec(ctx, tc.ref)
			if code(err) != tc.code {
				t.Fatalf("got %v, want %s", err, tc.code)
			}
			if msg := status.Convert(err).Message(); !strings.Contains(msg, tc.says) {
				t.Errorf("message %q does not say %q", msg, tc.says)
			}
		})
	}
	if n := len(f.srv.ScrapeWorkloads()); n != 0 {
		t.Errorf("refused triggers left %d workloads to scrape", n)
	}
}

// A Deployment's pods by podSelector; a trigger KEDA stopped asking about
// is forgotten after Idle; at most MaxTriggers are kept.
func TestPodSelectorIdleAndLimit(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Idle = time.Minute; o.MaxTriggers = 2 })
	ctx := context.Background()
	md := func(q string) map[string]string {
		m := map[string]string{"query": q, "threshold": "1", "podSelector": "app=api"}
		f.objects.declare("shop", "deploy", "external", m)
		return m
	}
	if _, err := f.client.GetMetricSpec(ctx, ref("deploy", md("vector(1)"))); err != nil {
		t.Fatal(err)
	}
	got := f.srv.ScrapeWorkloads()
	if len(got) != 1 || got[0].Selector.String() != "app=api" || got[0].Labels["job"] != "api" || got[0].Labels["workload_kind"] != "Deployment" {
		t.Fatalf("scrape workloads %+v", got)
	}
	if _, err := f.client.GetMetricSpec(ctx, ref("deploy", md("vector(2)"))); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.GetMetricSpec(ctx, ref("deploy", md("vector(3)"))); code(err) != codes.ResourceExhausted {
		t.Errorf("third trigger with MaxTriggers 2: %v, want ResourceExhausted", err)
	}
	if got := f.requested(); len(got) != 2 {
		t.Errorf("queries kept by the store: %q, want the two triggers'", got)
	}
	f.now = f.now.Add(2 * time.Minute)
	if got := f.srv.ScrapeWorkloads(); len(got) != 0 {
		t.Errorf("after Idle: %d workloads to scrape, want 0", len(got))
	}
	if got := f.requested(); len(got) != 0 {
		t.Errorf("after Idle the store still keeps %q", got)
	}
	if _, err := f.client.GetMetricSpec(ctx, ref("deploy", md("vector(3)"))); err != nil {
		t.Errorf("after the others expired: %v", err)
	}
}

// external-push: StreamIsActive sends the first verdict and then only
// changes; StreamMetricSpec sends the spec once.
func TestStreams(t *testing.T) {
	f := newFixture(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	md := map[string]string{"query": "queue", "threshold": "10", "podSelector": "app=api"}
	f.objects.declare("shop", "deploy", "external-push", md)
	// The query is kept to the ScaledObject's namespace.
	f.values.set(`queue{namespace="shop"}`, 0)
	stream, err := f.client.StreamIsActive(ctx, ref("deploy", md))
	if err != nil {
		t.Fatal(err)
	}
	recv := func() bool {
		t.Helper()
		r, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return r.Result
	}
	if recv() {
		t.Fatal("first verdict at 0: active")
	}
	f.values.set(`queue{namespace="shop"}`, 3)
	if !recv() {
		t.Fatal("verdict after the value rose: inactive")
	}
	f.values.set(`queue{namespace="shop"}`, 0)
	if recv() {
		t.Fatal("verdict after the value fell: active")
	}

	specs, err := f.client.StreamMetricSpec(ctx, ref("deploy", md))
	if err != nil {
		t.Fatal(err)
	}
	s, err := specs.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if s.MetricSpecs[0].TargetSizeFloat != 10 {
		t.Errorf("streamed spec %v", s)
	}
}

// TLS is optional: with a certificate, KEDA's enableTLS connects and a
// plaintext client is refused.
func TestTLS(t *testing.T) {
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certPEM)
	serverCreds := credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	md := map[string]string{"query": "vector(1)", "threshold": "1"}

	f := newFixture(t, nil)
	f.objects.declare("shop", "web", "external", md)
	c := serve(t, f.srv, serverCreds, credentials.NewTLS(&tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}))
	if _, err := c.GetMetricSpec(context.Background(), ref("web", md)); err != nil {
		t.Errorf("over TLS: %v", err)
	}

	g := newFixture(t, nil)
	g.objects.declare("shop", "web", "external", md)
	plain := serve(t, g.srv, serverCreds, insecure.NewCredentials())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := plain.GetMetricSpec(ctx, ref("web", md)); code(err) != codes.Unavailable {
		t.Errorf("plaintext to a TLS server: %v, want Unavailable", err)
	}
}

// TestLiveKindsReachTheExternalScaler: with Options.Kinds the
// scaler sees kinds activated after it started (a ScaleProfile applied
// while scaleplane runs): a ScaledObject whose target had no profile is
// refused until the kind's profile is active, then its pods are found by
// the profile's pod labels.
func TestLiveKindsReachTheExternalScaler(t *testing.T) {
	var (
		mu    sync.Mutex
		kinds []*profile.Compiled
	)
	f := newFixture(t, func(o *Options) {
		o.Views = nil
		o.Kinds = func() []*profile.Compiled {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(kinds)
		}
	})
	ctx := context.Background()
	md := map[string]string{"query": "vector(1)", "threshold": "1"}
	f.objects.declare("shop", "deploy", "external", md)
	if _, err := f.client.GetMetricSpec(ctx, ref("deploy", md)); code(err) != codes.FailedPrecondition {
		t.Fatalf("before the kind is profiled: got %v, want FailedPrecondition", err)
	}
	deployments, err := profile.Compile(v1alpha1.ScaleProfileSpec{
		Target:       v1alpha1.TargetKind{APIVersion: "apps/v1", Kind: "Deployment", Resource: "deployments"},
		ReplicasPath: ".spec.replicas",
		ScaleConfig:  v1alpha1.ScaleConfigLocation{Annotation: "scaleplane.io/scale-config"},
		Pods:         v1alpha1.Pods{Labels: map[string]string{"app": "${name}"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	kinds = append(kinds, deployments)
	mu.Unlock()
	// KEDA asks again after a refusal; the metadata is the same, so the
	// trigger is built anew from the kinds of now.
	if _, err := f.client.GetMetricSpec(ctx, ref("deploy", md)); err != nil {
		t.Fatalf("once the kind is profiled: %v", err)
	}
	got := f.srv.ScrapeWorkloads()
	if len(got) != 1 || got[0].Selector.String() != "app=api" {
		t.Errorf("workloads to scrape %v, want the Deployment's pods by the profile's labels (app=api)", got)
	}
}
