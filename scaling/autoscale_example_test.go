package scaling_test

import (
	"context"
	"fmt"
	"time"

	"github.com/scaleplane/scaleplane/scaling"
)

// constSource stands in for the embedded PromQL store.
type constSource float64

func (c constSource) Eval(context.Context, string, time.Time, map[string]string) (float64, bool, error) {
	return float64(c), true, nil
}

// One tick of the trigger autoscaler for one workload, as a controller runs
// it: build the scalers once, sample them, decide, write R through /scale,
// then record the scale in the workload's History.
func ExampleDecide() {
	ctx := context.Background()
	// The component that owns a metrics pipeline builds its sources once
	// and gives them to its webhook and its autoscaler alike.
	sources := scaling.NewSources()
	if err := sources.Register(scaling.SourcePromQL, scaling.Source{New: scaling.QueryScaler(constSource(103))}); err != nil {
		fmt.Println(err)
		return
	}

	minR, maxR := int32(1), int32(10)
	cfg := &scaling.Config{
		MinReplicas: &minR,
		MaxReplicas: &maxR,
		Triggers: []scaling.Trigger{{
			Name: "rps", Type: scaling.TargetAverageValue, Threshold: 20,
			Query: `sum(rate(http_requests_total{namespace="${namespace}",job="${name}"}[1m]))`,
		}},
	}
	scalers := make([]scaling.Scaler, len(cfg.Triggers))
	for i, t := range cfg.Triggers {
		s, err := sources.NewScaler(ctx, scaling.ScalerConfig{Trigger: t, Namespace: "shop", Name: "cart"})
		if err != nil {
			fmt.Println(err)
			return
		}
		defer func() { _ = s.Close(ctx) }()
		scalers[i] = s
	}

	history := &scaling.History{} // one per workload, kept across ticks
	now := time.Date(2026, 6, 10, 12, 0, 0, 0, time.UTC)
	results := make([]scaling.TriggerResult, len(scalers))
	for i, s := range scalers {
		sample, err := s.Sample(ctx, now)
		results[i] = scaling.TriggerResult{Name: s.Metric().Name, Sample: sample, Err: err}
	}
	d := scaling.Decide(scaling.DecideInput{Now: now, Current: 3, Config: cfg, Triggers: results}, history)
	if d.Desired != d.Current {
		// ... write d.Desired to the workload's /scale; on success:
		history.RecordScale(cfg, d)
	}
	fmt.Println(d.Action, d.Desired)
	fmt.Println(d.Reason)
	// Output:
	// ScaleUp 6
	// Scale up from 3 to 6: rps=103 over 3 replicas is 34.3 per replica, above the target 20: asks for ceil(103 / 20) = 6
}
