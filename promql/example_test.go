package promql_test

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/scaleplane/scaleplane/promql"
)

// A trigger query evaluated over samples the scraper would have stored.
func ExampleEvaluator() {
	now := time.Unix(1_732_100_300, 0)
	store := promql.NewStore(promql.Options{Now: func() time.Time { return now }})
	for sec := 0; sec <= 300; sec += 5 {
		ts := now.Add(time.Duration(sec-300) * time.Second).UnixMilli()
		for _, pod := range []string{"a", "b"} {
			ls := labels.FromStrings("__name__", "http_requests_total", "namespace", "shop", "pod", pod)
			_ = store.Append(ls, ts, float64(sec*3)) // 3 requests/s per pod
		}
	}
	ev := promql.NewEvaluator(store, promql.EvaluatorOptions{})
	vars := map[string]string{"namespace": "shop"}

	res, err := ev.Eval(context.Background(), `sum(rate(http_requests_total{namespace="${namespace}"}[1m]))`, now, vars)
	fmt.Println(res.Kind, res.Value, err)

	res, err = ev.Eval(context.Background(), `sum(rate(http_requests_total{namespace="other"}[1m]))`, now, vars)
	fmt.Println(res.Kind, err)

	_, err = ev.Eval(context.Background(), `rate(http_requests_total[1m])`, now, vars)
	fmt.Println(err)
	// Output:
	// value 6 <nil>
	// no data <nil>
	// query returns 2 series ({namespace="shop", pod="a"}, {namespace="shop", pod="b"}), not one number; aggregate them, e.g. sum(...) or max(...)
}
