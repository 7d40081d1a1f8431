package status

import (
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

func viewOf(t testing.TB, kind string) *profile.Compiled {
	t.Helper()
	for _, p := range profile.Samples() {
		v, err := profile.Compile(p)
		if err != nil {
			t.Fatalf("compile %s: %v", p.Target.Kind, err)
		}
		if v.GVK().Kind == kind {
			return v
		}
	}
	t.Fatalf("no sample profile %s", kind)
	return nil
}

func cpuMetric() autoscalingv2.MetricSpec {
	q := resource.MustParse("100m")
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: "cpu", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}}}
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

func (b *cfgBuilder) idle(start, timeout int32) *cfgBuilder {
	b.c.Idle = &scaling.Idle{ReplicasAtStart: ptr(start), TimeoutSeconds: ptr(timeout)}
	return b
}

func (b *cfgBuilder) metric() *cfgBuilder {
	b.c.Metrics = append(b.c.Metrics, cpuMetric())
	return b
}

func (b *cfgBuilder) obj() *scaling.Config { return &b.c }
