package externalscaler

import (
	"context"
	"fmt"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/model/labels"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/externalscaler/pb"
	"github.com/scaleplane/scaleplane/promql"
)

// wantStatus fails unless err has code c and its message says says.
func wantStatus(t *testing.T, what string, err error, c codes.Code, says string) {
	t.Helper()
	if code(err) != c {
		t.Errorf("%s: %v, want %s", what, err, c)
		return
	}
	if msg := status.Convert(err).Message(); !strings.Contains(msg, says) {
		t.Errorf("%s: message %q does not say %q", what, msg, says)
	}
}

// Hostile caller: the port is plaintext gRPC reachable
// from the cluster network, and a reference is only a namespace, a name and
// metadata. A caller who names a real ScaledObject with metadata its owner
// did not declare (a query of their own, of another namespace's metrics)
// gets nothing built, cannot fill MaxTriggers, and cannot keep a trigger
// its owner removed (and its pods' scraping) alive.
func TestExternalScalerHostileForgedRef(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxTriggers = 2 })
	ctx := context.Background()
	declared := map[string]string{"query": "queue", "threshold": "1", "podSelector": "app=api"}
	f.objects.declare("shop", "deploy", "external", declared)
	// The owner's other trigger types do not make their metadata ours.
	other := map[string]string{"query": "secret", "threshold": "1", "podSelector": "app=api"}
	f.objects.declare("shop", "deploy", "prometheus", other)

	for i := range 5 {
		forged := map[string]string{"query": fmt.Sprintf(`sum(secret{namespace="bank",n="%d"})`, i), "threshold": "1", "podSelector": "app=api"}
		_, err := f.client.GetMetricSpec(ctx, ref("deploy", forged))
		wantStatus(t, "forged metadata", err, codes.NotFound, "has no trigger of type external or external-push with this metadata")
	}
	_, err := f.client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: ref("deploy", other)})
	wantStatus(t, "metadata of a prometheus trigger", err, codes.NotFound, "has no trigger of type external")
	// KEDA sends a FromEnv key's value from the environment, never the
	// ScaledObject's: the one answer names that reason too.
	f.objects.put(scaledObject("shop", "env", "apps/v1", "Deployment", "api"))
	f.objects.declare("shop", "env", "external", map[string]string{"queryFromEnv": "QUERY", "threshold": "1"})
	_, err = f.client.IsActive(ctx, ref("env", map[string]string{"queryFromEnv": "sum(x)", "threshold": "1"}))
	wantStatus(t, "a FromEnv key", err, codes.NotFound, "metadata keys ending in FromEnv are not supported")
	_, err = f.client.IsActive(ctx, &pb.ScaledObjectRef{Namespace: "bank", Name: "vault", ScalerMetadata: declared})
	wantStatus(t, "a ScaledObject that does not exist", err, codes.NotFound, "ScaledObject bank/vault does not exist or has no trigger")
	if got := f.requested(); len(got) != 0 {
		t.Errorf("forged calls made the store keep %q", got)
	}
	if n := len(f.srv.ScrapeWorkloads()); n != 0 {
		t.Errorf("forged calls left %d workloads to scrape", n)
	}

	// The declared trigger is served: forged calls took no room.
	if _, err := f.client.GetMetricSpec(ctx, ref("deploy", declared)); err != nil {
		t.Fatalf("declared trigger: %v", err)
	}
	if n := len(f.srv.ScrapeWorkloads()); n != 1 {
		t.Fatalf("declared trigger: %d workloads to scrape, want 1", n)
	}

	// The owner deletes the ScaledObject: the next call, from KEDA or
	// anyone replaying its metadata, forgets the trigger at once rather
	// than keeping it (and its scraping) while calls keep coming.
	f.objects.delete("shop", "deploy")
	_, err = f.client.GetMetricSpec(ctx, ref("deploy", declared))
	wantStatus(t, "after the ScaledObject was deleted", err, codes.NotFound, "does not exist or has no trigger")
	if n := len(f.srv.ScrapeWorkloads()); n != 0 {
		t.Errorf("after deletion: %d workloads still scraped", n)
	}
	if got := f.requested(); len(got) != 0 {
		t.Errorf("after deletion the store still keeps %q", got)
	}
}

// TestExternalScalerHostileProbesExistence: the port answers whoever
// reaches it, without authentication. A caller probing other namespaces
// learns nothing from the answers: a ScaledObject that does not exist, one
// whose triggers are of other types, one with an external trigger of other
// metadata, and one whose trigger reads keys from the environment (secrets'
// names, which the answer must not echo) all get the same code and the
// same message, but for the reference the caller wrote itself.
func TestExternalScalerHostileProbesExistence(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	for _, name := range []string{"payments", "ledger", "vault"} {
		f.objects.put(scaledObject("bank", name, "apps/v1", "Deployment", name))
	}
	f.objects.declare("bank", "payments", "external", map[string]string{"query": "sum(q)", "threshold": "1", "podSelector": "app=pay"})
	f.objects.declare("bank", "ledger", "prometheus", map[string]string{"query": "sum(l)", "threshold": "1"})
	f.objects.declare("bank", "vault", "external", map[string]string{"queryFromEnv": "VAULT_QUERY", "passwordFromEnv": "VAULT_ADMIN_PASSWORD", "threshold": "1"})
	probe := map[string]string{"query": "vector(1)", "threshold": "1"}
	answers := map[string]string{}
	for _, name := range []string{"payments", "ledger", "vault", "nothing-here"} {
		r := &pb.ScaledObjectRef{Namespace: "bank", Name: name, ScalerMetadata: probe}
		_, errActive := f.client.IsActive(ctx, r)
		_, errSpec := f.client.GetMetricSpec(ctx, r)
		_, errMetrics := f.client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: r, MetricName: "x"})
		for _, err := range []error{errActive, errSpec, errMetrics} {
			if code(err) != codes.NotFound {
				t.Errorf("%s: %v, want NotFound", name, err)
			}
			msg := status.Convert(err).Message()
			for _, secret := range []string{"queryFromEnv", "passwordFromEnv", "VAULT_", "prometheus"} {
				if strings.Contains(msg, secret) {
					t.Errorf("%s: the answer %q tells %q", name, msg, secret)
				}
			}
			answers[name] = strings.ReplaceAll(msg, "bank/"+name, "bank/NAME")
		}
	}
	for name, msg := range answers {
		if msg != answers["nothing-here"] {
			t.Errorf("a caller tells %s from a ScaledObject that does not exist:\n%q\n%q", name, msg, answers["nothing-here"])
		}
	}
}

// Hostile caller and tenant: a reference that names no
// possible object, metadata larger than a trigger needs, a gRPC message
// of megabytes, and a ScaledObject whose target name or kind (KEDA's CRD
// checks neither) would become a regex or a label value: each is refused
// with what to change, before anything is read or kept.
func TestExternalScalerHostileRefAndTarget(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxMetadataBytes = 8 << 10 })
	ctx := context.Background()
	ok := map[string]string{"query": `sum(up{job=~"${name}"})`, "threshold": "1", "podSelector": "app=api"}
	big := map[string]string{"query": "vector(1)", "threshold": "1", "scalerAddress": strings.Repeat("a", 9<<10)}
	huge := map[string]string{"query": "vector(1)", "threshold": "1", "scalerAddress": strings.Repeat("a", 1<<20)}
	f.objects.declare("shop", "deploy", "external", big)
	for _, so := range []struct{ name, kind, target string }{
		{"regex", "Deployment", ".*"},
		{"long", "Deployment", strings.Repeat("a", 300)},
		{"kind", `Deploy"ment`, "api"},
	} {
		f.objects.put(scaledObject("shop", so.name, "apps/v1", so.kind, so.target))
		f.objects.declare("shop", so.name, "external", ok)
	}
	cases := []struct {
		name string
		ref  *pb.ScaledObjectRef
		code codes.Code
		says string
	}{
		{"name with a slash", &pb.ScaledObjectRef{Namespace: "shop", Name: "a/b", ScalerMetadata: ok}, codes.InvalidArgument, "scaledObjectRef.name is not an object name"},
		{"namespace of 300 bytes", &pb.ScaledObjectRef{Namespace: strings.Repeat("n", 300), Name: "web", ScalerMetadata: ok}, codes.InvalidArgument, "scaledObjectRef.namespace is not a namespace name"},
		{"metadata over the limit", ref("deploy", big), codes.InvalidArgument, "over the limit of 8192"},
		{"a message of a megabyte", ref("deploy", huge), codes.ResourceExhausted, "larger than max"},
		{"target name that is a regex", ref("regex", ok), codes.InvalidArgument, "spec.scaleTargetRef.name"},
		{"target name of 300 bytes", ref("long", ok), codes.InvalidArgument, "spec.scaleTargetRef.name"},
		{"target kind with a quote", ref("kind", ok), codes.InvalidArgument, "spec.scaleTargetRef.kind"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.client.GetMetricSpec(ctx, tc.ref)
			wantStatus(t, "GetMetricSpec", err, tc.code, tc.says)
		})
	}
	if got := f.requested(); len(got) != 0 {
		t.Errorf("refused calls made the store keep %q", got)
	}
	if n := len(f.srv.ScrapeWorkloads()); n != 0 {
		t.Errorf("refused calls left %d workloads to scrape", n)
	}
}

// deadline is a context for one call of a test.
func deadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Hostile tenant: the embedded store holds the pods of
// every namespace, and KEDA shows the value in the ScaledObject's own
// namespace (its HPA's status). A query that leaves out the namespace, or
// names another one, reads only the ScaledObject's namespace, through
// sums, regexes and subqueries alike.
func TestExternalScalerHostileOtherNamespace(t *testing.T) {
	store := promql.NewStore(promql.Options{})
	store.Request("secret")
	limits := promql.Limits{}.WithDefaults()
	sources, err := autoscaler.NewSources(promql.NewEvaluator(store, promql.EvaluatorOptions{Limits: limits}), nil, limits)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *Options) { o.Sources = sources })
	at := f.now.UnixMilli()
	for ns, v := range map[string]float64{"shop": 1, "bank": 1000} {
		if err := store.Append(labels.FromStrings("__name__", "secret", "namespace", ns, "pod", ns+"-0"), at-5000, v); err != nil {
			t.Fatal(err)
		}
	}
	ctx := deadline(t)
	cases := []struct {
		query string
		want  float64 // -1: no data
	}{
		{`sum(secret)`, 1},
		{`sum(secret{namespace=~".+"})`, 1},
		{`sum(secret{namespace="bank"})`, -1},
		{`sum(secret{namespace!="shop"})`, -1},
		{`max_over_time(sum(secret)[1m:10s])`, 1},
		{`sum(secret) + sum({__name__="secret",namespace="bank"} or vector(0))`, 1},
	}
	for i, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			md := map[string]string{"query": tc.query, "threshold": "1", "podSelector": "app=api", "metricName": fmt.Sprintf("q%d", i)}
			got, err := f.client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: f.declared("deploy", md)})
			if tc.want < 0 {
				wantStatus(t, "GetMetrics", err, codes.Unavailable, "no data")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v := got.MetricValues[0].MetricValueFloat; v != tc.want {
				t.Errorf("value %v, want %v (namespace shop's only)", v, tc.want)
			}
		})
	}
}

// gate is a scaling.MetricSource whose evaluations block until released,
// announcing each on entered: an evaluation slower than any wait for a
// slot, whatever the timings.
type gate struct {
	entered chan struct{}
	release chan struct{}
}

func (g *gate) Eval(context.Context, string, time.Time, map[string]string) (float64, bool, error) {
	g.entered <- struct{}{}
	<-g.release
	return 1, true, nil
}

// Hostile caller: a flood of GetMetrics (or of streams
// evaluating every interval) runs at most MaxEvaluations evaluations at
// once; the rest wait for a slot within their SampleTimeout and then get
// Unavailable, "busy", rather than each taking a core.
func TestExternalScalerHostileEvaluationFlood(t *testing.T) {
	g := &gate{entered: make(chan struct{}, 8), release: make(chan struct{})}
	f := newFixture(t, func(o *Options) {
		o.Sources = querySources(t, g)
		o.MaxEvaluations = 1
		o.SampleTimeout = 500 * time.Millisecond
	})
	ctx := deadline(t)
	md := map[string]string{"query": "vector(1)", "threshold": "1"}
	r := f.declared("web", md)
	first := make(chan error, 1)
	go func() {
		_, err := f.client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: r})
		first <- err
	}()
	select {
	case <-g.entered:
	case <-ctx.Done():
		t.Fatal("the first evaluation never started")
	}
	// The only slot is held: this call must not reach the source.
	_, err := f.client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: r})
	wantStatus(t, "GetMetrics while the slot is held", err, codes.Unavailable, "scaleplane is busy")
	select {
	case <-g.entered:
		t.Error("a second evaluation ran while MaxEvaluations (1) was running")
	default:
	}
	close(g.release)
	if err := <-first; err != nil {
		t.Errorf("the first call: %v", err)
	}
	// The slot is free again.
	if _, err := f.client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: r}); err != nil {
		t.Errorf("after the first call returned: %v", err)
	}
}

// Hostile caller: streams are goroutines (StreamIsActive
// evaluates each interval, StreamMetricSpec waits for the caller to hang
// up), so one trigger gets at most MaxStreamsPerTrigger and the server at
// most MaxStreams; a closed stream gives its place back.
func TestExternalScalerHostileStreams(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxStreams = MaxStreamsPerTrigger + 1 })
	md := map[string]string{"query": "vector(1)", "threshold": "1"}
	f.values.set("vector(1)", 1)
	r := f.declared("web", md)
	open := func(ctx context.Context, r *pb.ScaledObjectRef) error {
		s, err := f.client.StreamMetricSpec(ctx, r)
		if err == nil {
			_, err = s.Recv()
		}
		return err
	}
	var cancels []context.CancelFunc
	for range MaxStreamsPerTrigger {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		t.Cleanup(cancel)
		cancels = append(cancels, cancel)
		if err := open(ctx, r); err != nil {
			t.Fatalf("stream within the limit: %v", err)
		}
	}
	ctx := deadline(t)
	wantStatus(t, "one stream too many for a trigger", open(ctx, r), codes.ResourceExhausted, "this trigger already has 4 open streams")
	push, err := f.client.StreamIsActive(ctx, r)
	if err == nil {
		_, err = push.Recv()
	}
	wantStatus(t, "StreamIsActive past the per-trigger limit", err, codes.ResourceExhausted, "open streams")

	// Another trigger takes the last place of MaxStreams.
	other := f.declared("web", map[string]string{"query": "vector(1)", "threshold": "2"})
	if err := open(ctx, other); err != nil {
		t.Fatalf("a second trigger's stream: %v", err)
	}
	third := f.declared("web", map[string]string{"query": "vector(1)", "threshold": "3"})
	wantStatus(t, "past MaxStreams", open(ctx, third), codes.ResourceExhausted, "at most 5 streams")

	// Closing one gives its place back, once the server has seen it end.
	cancels[0]()
	for {
		err := open(ctx, third)
		if err == nil {
			break
		}
		if code(err) != codes.ResourceExhausted {
			t.Fatalf("after a stream closed: %v", err)
		}
		select {
		case <-ctx.Done():
			t.Fatal("a closed stream never gave its place back")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Hostile tenant: metadata.query is
// held to the query limits exactly as a workload trigger's is at
// admission (the same checker, the same messages), before it is parsed
// for the store, expanded or evaluated, and nothing is kept for it.
func TestExternalScalerHostileQueryCost(t *testing.T) {
	f := newFixture(t, nil)
	ctx := deadline(t)
	cases := []struct {
		name, query, says string
	}{
		{"subquery of ten years at 1ms", `max_over_time(vector(1)[10y:1ms])`, "points per series"},
		{"range of ten years", `sum(rate(http_requests_total[10y]))`, "points per series"},
		{"nested subqueries", `max_over_time(max_over_time(vector(1)[1d:1s])[1d:1s])`, "points per series"},
		{"a query of 20 KiB", `sum(` + strings.Repeat(`x+`, 10<<10) + `x)`, "bytes long, over the limit of 4096"},
		{"nesting 1000 deep", strings.Repeat("(", 1000) + "1" + strings.Repeat(")", 1000), "levels deep at offset 100, over the limit of 100"},
		{"a regex that compiles huge", `sum(x{a=~"((((a{100}){100}){100}){100})"})`, "regex"},
		{"a placeholder that is not one", `sum(x{namespace="${namepsace}"})`, "unknown placeholder"},
		{"a range vector", `x[1m]`, "metadata.query"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			md := map[string]string{"query": tc.query, "threshold": "1", "metricName": fmt.Sprintf("q%d", i)}
			_, err := f.client.GetMetricSpec(ctx, f.declared("web", md))
			wantStatus(t, "GetMetricSpec", err, codes.InvalidArgument, tc.says)
			if msg := status.Convert(err).Message(); !strings.Contains(msg, "metadata.query") {
				t.Errorf("message %q is not at metadata.query", msg)
			}
		})
	}
	if got := f.requested(); len(got) != 0 {
		t.Errorf("refused queries made the store keep %q", got)
	}
}

// Hostile tenant: a threshold or a value beyond int64
// (KEDA reads the integer fields besides the float ones) is clamped, not
// converted to whatever Go makes of it (-9223372036854775808 on amd64).
func TestExternalScalerHostileHugeNumbers(t *testing.T) {
	f := newFixture(t, nil)
	ctx := deadline(t)
	md := map[string]string{"query": "vector(1)", "threshold": "1e300"}
	r := f.declared("web", md)
	spec, err := f.client.GetMetricSpec(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if got := spec.MetricSpecs[0].TargetSize; got != math.MaxInt64 {
		t.Errorf("target size of threshold 1e300: %d, want %d", got, int64(math.MaxInt64))
	}
	for _, tc := range []struct {
		value float64
		want  int64
	}{{1e300, math.MaxInt64}, {-1e300, math.MinInt64}, {-2.5, -3}} {
		f.values.set("vector(1)", tc.value)
		m, err := f.client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: r})
		if err != nil {
			t.Fatal(err)
		}
		if got := m.MetricValues[0].MetricValue; got != tc.want {
			t.Errorf("metric value of %v: %d, want %d", tc.value, got, tc.want)
		}
	}
}

// Lifecycle: when Serve's context ends (the manager
// stops, leadership is lost) or its listener fails, it returns promptly
// with streams still open that their caller never closes: they end with
// Unavailable, and every trigger is released (the store keeps nothing).
func TestExternalScalerHostileShutdown(t *testing.T) {
	for _, how := range []string{"context", "listener"} {
		t.Run(how, func(t *testing.T) {
			var opts Options
			f := newFixture(t, func(o *Options) { opts = *o })
			srv, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ctx, lis, nil) }()
			conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = conn.Close() }()
			c := pb.NewExternalScalerClient(conn)

			md := map[string]string{"query": "queue", "threshold": "1", "podSelector": "app=api"}
			f.objects.declare("shop", "deploy", "external-push", md)
			f.values.set(`queue{namespace="shop"}`, 1)
			// The caller does not cancel these (the deadline only keeps a
			// broken server from hanging the test).
			callCtx, callCancel := context.WithTimeout(context.Background(), time.Minute)
			defer callCancel()
			push, err := c.StreamIsActive(callCtx, ref("deploy", md))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := push.Recv(); err != nil {
				t.Fatal(err)
			}
			spec, err := c.StreamMetricSpec(callCtx, ref("deploy", md))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := spec.Recv(); err != nil {
				t.Fatal(err)
			}
			if len(f.requested()) == 0 {
				t.Fatal("the stream's trigger asked the store for nothing")
			}

			if how == "context" {
				cancel()
			} else {
				lis.Close()
			}
			select {
			case err := <-served:
				if (how == "listener") != (err != nil) {
					t.Errorf("Serve after its %s ended: %v", how, err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("Serve did not return after its %s ended", how)
			}
			for name, recv := range map[string]func() error{
				"StreamIsActive":   func() error { _, err := push.Recv(); return err },
				"StreamMetricSpec": func() error { _, err := spec.Recv(); return err },
			} {
				if err := recv(); code(err) != codes.Unavailable {
					t.Errorf("%s after Serve returned: %v, want Unavailable", name, err)
				}
			}
			if got := f.requested(); len(got) != 0 {
				t.Errorf("after Serve returned the store still keeps %q", got)
			}
		})
	}
}

// Hostile tenant: ScaledObjects of one namespace take at
// most MaxTriggersPerNamespace of the MaxTriggers places, so a tenant
// with many ScaledObjects does not lock every other namespace out; the
// places come back when their triggers are forgotten.
func TestExternalScalerHostileOneNamespaceFillsAll(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxTriggers = 3; o.MaxTriggersPerNamespace = 2; o.Idle = time.Minute })
	ctx := deadline(t)
	f.objects.put(scaledObject("other", "web", "samples.scaleplane.io/v1alpha1", "RackedCluster", "cart"))
	md := func(ns, th string) *pb.ScaledObjectRef {
		m := map[string]string{"query": "vector(1)", "threshold": th}
		f.objects.declare(ns, "web", "external", m)
		return &pb.ScaledObjectRef{Namespace: ns, Name: "web", ScalerMetadata: m}
	}
	for _, th := range []string{"1", "2"} {
		if _, err := f.client.GetMetricSpec(ctx, md("shop", th)); err != nil {
			t.Fatalf("shop's trigger %s: %v", th, err)
		}
	}
	_, err := f.client.GetMetricSpec(ctx, md("shop", "3"))
	wantStatus(t, "shop's third trigger", err, codes.ResourceExhausted, "at most 2 external triggers of one namespace at once, and shop has that many")
	if _, err := f.client.GetMetricSpec(ctx, md("other", "1")); err != nil {
		t.Errorf("another namespace's trigger while shop is at its limit: %v", err)
	}
	f.now = f.now.Add(2 * time.Minute)
	if _, err := f.client.GetMetricSpec(ctx, md("shop", "3")); err != nil {
		t.Errorf("after shop's triggers were forgotten: %v", err)
	}
}

// Hostile caller: past MaxWaiting calls waiting for an
// evaluation slot, a call is refused at once instead of holding a
// goroutine for up to SampleTimeout, so a flood of calls costs their
// count, not their count times the timeout.
func TestExternalScalerHostileWaitingCalls(t *testing.T) {
	g := &gate{entered: make(chan struct{}, 8), release: make(chan struct{})}
	f := newFixture(t, func(o *Options) {
		o.Sources = querySources(t, g)
		o.MaxEvaluations = 1
		o.MaxWaiting = 1
		o.SampleTimeout = time.Hour
	})
	ctx := deadline(t)
	r := f.declared("web", map[string]string{"query": "vector(1)", "threshold": "1"})
	results := make(chan error, 2)
	call := func() {
		_, err := f.client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: r})
		results <- err
	}
	go call()
	select {
	case <-g.entered:
	case <-ctx.Done():
		t.Fatal("the first evaluation never started")
	}
	go call()
	for f.srv.waiting.Load() != 1 {
		select {
		case <-ctx.Done():
			t.Fatal("the second call never waited for the slot")
		case <-time.After(5 * time.Millisecond):
		}
	}
	// The slot is held and the one waiting place taken: refused now, not
	// after the hour of SampleTimeout (the call's own deadline is 10 s).
	_, err := f.client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: r})
	wantStatus(t, "GetMetrics with the waiting place taken", err, codes.Unavailable, "scaleplane is busy")
	close(g.release)
	for range 2 {
		if err := <-results; err != nil {
			t.Errorf("a call that held or waited for the slot: %v", err)
		}
	}
}

// Tenant edits: when a ScaledObject's trigger changes,
// KEDA asks with the new metadata and never again with the old; the old
// trigger is forgotten at that first call (its pods no longer scraped,
// its series no longer kept), not after Idle, and it takes no place of
// the namespace's limit meanwhile.
func TestExternalScalerHostileEditReleasesOld(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxTriggersPerNamespace = 1 })
	ctx := deadline(t)
	before := map[string]string{"query": "old_metric", "threshold": "1", "podSelector": "app=old"}
	after := map[string]string{"query": "new_metric", "threshold": "1", "podSelector": "app=new"}
	if _, err := f.client.GetMetricSpec(ctx, f.declared("deploy", before)); err != nil {
		t.Fatal(err)
	}
	// The owner replaces the trigger.
	so := scaledObject("shop", "deploy", "apps/v1", "Deployment", "api")
	f.objects.put(so)
	f.objects.declare("shop", "deploy", "external", after)
	if _, err := f.client.GetMetricSpec(ctx, ref("deploy", after)); err != nil {
		t.Fatalf("the edited trigger with its namespace's one place taken by the old: %v", err)
	}
	var selectors []string
	for _, w := range f.srv.ScrapeWorkloads() {
		selectors = append(selectors, w.Selector.String())
	}
	if diff := cmp.Diff([]string{"app=new"}, selectors); diff != "" {
		t.Errorf("pods scraped after the edit (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`new_metric{namespace="shop"}`}, f.requested()); diff != "" {
		t.Errorf("queries kept after the edit (-want +got):\n%s", diff)
	}
}

// Nothing accepted that then breaks: a query within the length limit as written can go over it once
// the namespace matchers are added to its selectors. The answer says so,
// at metadata.query, and how to write it so that nothing is added; written
// that way, the same query is served.
func TestExternalScalerHostileRewriteLength(t *testing.T) {
	store := promql.NewStore(promql.Options{})
	limits := promql.Limits{}.WithDefaults()
	sources, err := autoscaler.NewSources(promql.NewEvaluator(store, promql.EvaluatorOptions{Limits: limits}), nil, limits)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *Options) { o.Sources = sources })
	ctx := deadline(t)
	query := func(term string) string {
		return term + strings.Repeat("+"+term, 3900/(len(term)+1)-1)
	}
	bare := query(`sum(metric_x{l="vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv"})`)
	_, err = f.client.GetMetricSpec(ctx, f.declared("web", map[string]string{"query": bare, "threshold": "1"}))
	wantStatus(t, "selectors without the namespace", err, codes.InvalidArgument, `metadata.query: with namespace="shop" added to each of its selectors the query is`)
	if msg := status.Convert(err).Message(); !strings.Contains(msg, `write namespace="${namespace}" in every selector`) {
		t.Errorf("message %q does not say how to write it", msg)
	}
	scoped := query(`sum(metric_x{l="vvvvvvvvvvvvvvvvvvvvvv",namespace="${namespace}"})`)
	if _, err := f.client.GetMetricSpec(ctx, f.declared("web", map[string]string{"query": scoped, "threshold": "1"})); err != nil {
		t.Errorf("selectors with namespace=\"${namespace}\": %v", err)
	}
}

// The namespace matcher reaches every selector, in every
// position a query can read series from (ranges, subqueries, @ and offset,
// info's second argument), once.
func TestExternalScalerHostileRewriteForms(t *testing.T) {
	cases := map[string]string{
		`up`:                                 `up{namespace="shop"}`,
		`up{namespace="shop"}`:               `up{namespace="shop"}`,
		`up{namespace="bank"}`:               `up{namespace="bank",namespace="shop"}`,
		`{__name__=~"up|down"}`:              `{__name__=~"up|down",namespace="shop"}`,
		`rate(x[1m] offset 5m)`:              `rate(x{namespace="shop"}[1m] offset 5m)`,
		`sum(x @ start())`:                   `sum(x{namespace="shop"} @ start())`,
		`max_over_time(sum(x)[1h:1m])`:       `max_over_time(sum(x{namespace="shop"})[1h:1m])`,
		`info(up, {k8s_cluster_name=~".+"})`: `info(up{namespace="shop"}, {k8s_cluster_name=~".+",namespace="shop"})`,
		`absent(nope) * on() group_left up`:  `absent(nope{namespace="shop"}) * on () group_left () up{namespace="shop"}`,
		`vector(1) + scalar(sum(x))`:         `vector(1) + scalar(sum(x{namespace="shop"}))`,
	}
	for q, want := range cases {
		got, err := promql.RequireLabel(q, "namespace", "shop")
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", q, diff)
		}
	}
}

// BenchmarkExternalScalerResolve is what every call costs before
// its evaluation, now that each one reads its ScaledObject again (from the
// cache) and checks that it declares the trigger: with KEDA's metadata,
// for a trigger already built.
func BenchmarkExternalScalerResolve(b *testing.B) {
	f := newFixture(b, nil)
	md := map[string]string{"query": rps, "threshold": "10", "activationThreshold": "1", "scalerAddress": "scaleplane.scaleplane-system:9090"}
	r := f.declared("web", md)
	ctx := context.Background()
	if _, err := f.srv.resolve(ctx, r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.srv.resolve(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

// KEDA stops asking about a deleted ScaledObject (or a
// removed trigger), so no call comes to forget it; the scraper's next
// discovery does, instead of scraping its pods and keeping its series
// until Idle.
func TestExternalScalerHostileDeletedWithoutCalls(t *testing.T) {
	f := newFixture(t, nil)
	ctx := deadline(t)
	f.objects.put(scaledObject("shop", "gone", "apps/v1", "Deployment", "api"))
	kept := map[string]string{"query": "kept_metric", "threshold": "1", "podSelector": "app=kept"}
	gone := map[string]string{"query": "gone_metric", "threshold": "1", "podSelector": "app=gone"}
	if _, err := f.client.GetMetricSpec(ctx, f.declared("deploy", kept)); err != nil {
		t.Fatal(err)
	}
	f.objects.declare("shop", "gone", "external", gone)
	if _, err := f.client.GetMetricSpec(ctx, ref("gone", gone)); err != nil {
		t.Fatal(err)
	}
	if n := len(f.srv.ScrapeWorkloads()); n != 2 {
		t.Fatalf("%d workloads to scrape, want 2", n)
	}
	f.objects.delete("shop", "gone")
	var selectors []string
	for _, w := range f.srv.ScrapeWorkloads() {
		selectors = append(selectors, w.Selector.String())
	}
	if diff := cmp.Diff([]string{"app=kept"}, selectors); diff != "" {
		t.Errorf("pods scraped after the ScaledObject was deleted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`kept_metric{namespace="shop"}`}, f.requested()); diff != "" {
		t.Errorf("queries kept after the ScaledObject was deleted (-want +got):\n%s", diff)
	}
}

// nsGate is a source whose evaluations wait for release, telling
// entered which namespace each is for.
type nsGate struct {
	entered chan string
	release chan struct{}
}

func (g *nsGate) Eval(_ context.Context, _ string, _ time.Time, vars map[string]string) (float64, bool, error) {
	g.entered <- vars["namespace"]
	<-g.release
	return 1, true, nil
}

// TestExternalScalerFloodLeavesOtherNamespaceItsSlots: one namespace's
// flood of GetMetrics on its own ScaledObject takes at most its share of
// the evaluation slots; a call of another namespace is evaluated at once
// while the flood's calls wait.
func TestExternalScalerFloodLeavesOtherNamespaceItsSlots(t *testing.T) {
	g := &nsGate{entered: make(chan string, 64), release: make(chan struct{})}
	f := newFixture(t, func(o *Options) {
		o.Sources = querySources(t, g)
		o.MaxEvaluations = 2
		o.SampleTimeout = time.Hour
	})
	f.objects.put(scaledObject("tenant-b", "web", "samples.scaleplane.io/v1alpha1", "RackedCluster", "cart"))
	ctx := deadline(t)
	md := map[string]string{"query": "vector(1)", "threshold": "1"}
	a := f.declared("web", md)
	f.objects.declare("tenant-b", "web", "external", md)
	b := &pb.ScaledObjectRef{Namespace: "tenant-b", Name: "web", ScalerMetadata: md}

	flood := make(chan error, 20)
	for range 20 {
		go func() {
			_, err := f.client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: a})
			flood <- err
		}()
	}
	next := func() string {
		select {
		case ns := <-g.entered:
			return ns
		case <-ctx.Done():
			t.Fatal("no evaluation started")
			return ""
		}
	}
	if ns := next(); ns != "shop" {
		t.Fatalf("first evaluation for %q, want shop's", ns)
	}
	bDone := make(chan error, 1)
	go func() {
		_, err := f.client.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: b})
		bDone <- err
	}()
	// shop holds its share (1 of 2): the other slot is tenant-b's.
	if ns := next(); ns != "tenant-b" {
		t.Errorf("second evaluation for %q while shop floods, want tenant-b's", ns)
	}
	close(g.release)
	if err := <-bDone; err != nil {
		t.Errorf("tenant-b's call: %v", err)
	}
	served := 0
	for range 20 {
		if err := <-flood; err == nil {
			served++
		}
	}
	if served == 0 {
		t.Error("none of shop's calls was answered once tenant-b was done")
	}
}

// TestExternalScalerTriggerBytesShare: the metadata of remembered triggers
// is bounded in bytes, a quarter of the bound per namespace: one
// namespace's triggers with long metadata are refused past its share while
// another namespace's trigger is still kept, and the bytes come back when
// the triggers are forgotten.
func TestExternalScalerTriggerBytesShare(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxTriggerBytes = 4 * 3000; o.Idle = time.Minute })
	ctx := deadline(t)
	f.objects.put(scaledObject("other", "web", "samples.scaleplane.io/v1alpha1", "RackedCluster", "cart"))
	pad := strings.Repeat(" ", 2000)
	md := func(ns, th string) *pb.ScaledObjectRef {
		m := map[string]string{"query": "vector(1)" + pad, "threshold": th}
		f.objects.declare(ns, "web", "external", m)
		return &pb.ScaledObjectRef{Namespace: ns, Name: "web", ScalerMetadata: m}
	}
	if _, err := f.client.GetMetricSpec(ctx, md("shop", "1")); err != nil {
		t.Fatalf("shop's first trigger: %v", err)
	}
	_, err := f.client.GetMetricSpec(ctx, md("shop", "2"))
	wantStatus(t, "shop's second long trigger", err, codes.ResourceExhausted, "bytes of one namespace's external trigger metadata")
	if _, err := f.client.GetMetricSpec(ctx, md("other", "1")); err != nil {
		t.Errorf("another namespace's trigger while shop is at its byte share: %v", err)
	}
	f.now = f.now.Add(2 * time.Minute)
	if _, err := f.client.GetMetricSpec(ctx, md("shop", "2")); err != nil {
		t.Errorf("after shop's trigger was forgotten: %v", err)
	}
}
