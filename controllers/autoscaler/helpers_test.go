package autoscaler

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/promql"
	"github.com/scaleplane/scaleplane/scaling"
)

// sampleViews returns the views of the sample profiles.
func sampleViews(t testing.TB) []*profile.Compiled {
	t.Helper()
	var out []*profile.Compiled
	for _, p := range profile.Samples() {
		v, err := profile.Compile(p)
		if err != nil {
			t.Fatalf("compile %s: %v", p.Target.Kind, err)
		}
		out = append(out, v)
	}
	return out
}

func viewOf(t testing.TB, kind string) *profile.Compiled {
	t.Helper()
	for _, v := range sampleViews(t) {
		if v.GVK().Kind == kind {
			return v
		}
	}
	t.Fatalf("no sample profile %s", kind)
	return nil
}

// testSources are the trigger sources of this package's tests: those of
// NewSources (cron, and promql over embedded when it is not nil) and the
// test scalers "fixed" and "blocking".
func testSources(t testing.TB, embedded promql.Source) *scaling.Sources {
	t.Helper()
	s, err := NewSources(embedded, nil, promql.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for name, ctor := range map[string]scaling.ScalerConstructor{
		"fixed":    func(context.Context, scaling.ScalerConfig) (scaling.Scaler, error) { return fixedScaler{}, nil },
		"blocking": func(context.Context, scaling.ScalerConfig) (scaling.Scaler, error) { return blockingScaler{}, nil },
	} {
		if err := s.Register(name, scaling.Source{New: ctor}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// cfg builds scale configs: cfg(0, 10).trigger("rps", 20).idle(1, 60).obj().
type cfgBuilder struct{ c scaling.Config }

func cfg(lo, hi int32) *cfgBuilder {
	return &cfgBuilder{scaling.Config{MinReplicas: ptr(lo), MaxReplicas: ptr(hi)}}
}

func (b *cfgBuilder) trigger(name string, threshold float64) *cfgBuilder {
	b.c.Triggers = append(b.c.Triggers, scaling.Trigger{
		Name: name, Type: scaling.TargetAverageValue, Threshold: threshold,
		Query: `sum(rate(http_requests_total{namespace="${namespace}",job="${name}"}[1m]))`,
	})
	return b
}

func (b *cfgBuilder) query(q string) *cfgBuilder {
	b.c.Triggers[len(b.c.Triggers)-1].Query = q
	return b
}

func (b *cfgBuilder) idle(start, timeout int32) *cfgBuilder {
	b.c.Idle = &scaling.Idle{ReplicasAtStart: ptr(start), TimeoutSeconds: ptr(timeout)}
	return b
}

func (b *cfgBuilder) metric() *cfgBuilder {
	b.c.Metrics = append(b.c.Metrics, cpuMetric())
	return b
}

func (b *cfgBuilder) obj() *scaling.Config { return &b.c }

// rackedCluster is a RackedCluster object with the given replicas and
// annotations.
func rackedCluster(ns, name string, replicas int64, ann map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": profile.SampleGroup + "/" + profile.SampleVersion,
		"kind":       "RackedCluster",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"replicas": replicas, "racks": []any{
			map[string]any{"name": "a", "members": replicas},
		}},
	}}
	u.SetAnnotations(ann)
	return u
}

func ptr[T any](v T) *T { return &v }
