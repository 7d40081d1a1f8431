package autoscaler_test

import (
	"fmt"
	"net/http/httptest"

	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/promql"
)

// How an operator's main wires the trigger autoscaler and its metrics
// pipeline (cmd/scaleplane/app does the same): the store, its evaluator as
// the "promql" trigger source, the scraper fed by the autoscaler's
// Discoverer, and the endpoints on the metrics server.
func Example() {
	views, err := profile.CompileAll(profile.SampleConfiguration().Profiles)
	if err != nil {
		fmt.Println(err)
		return
	}
	store := promql.NewStore(promql.Options{})
	// One set of trigger sources per component, given to the webhook too
	// (webhooks.Options.Sources), so that admission accepts exactly the
	// triggers the autoscaler can read.
	limits := promql.Limits{}
	sources, err := autoscaler.NewSources(promql.NewEvaluator(store, promql.EvaluatorOptions{Limits: limits}), nil, limits)
	if err != nil {
		fmt.Println(err)
		return
	}
	a, err := autoscaler.New(autoscaler.Options{Views: views, Sources: sources, RequestQueries: store.Registry().SetOwner})
	if err != nil {
		fmt.Println(err)
		return
	}
	scraper, err := promql.NewScraper(promql.ScraperOptions{Store: store, Discoverer: a.Discoverer()})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = scraper
	// With a manager:
	//	mgr.Add(scraper)
	//	a.SetupWithManager(mgr)
	//	mgr.AddMetricsServerExtraHandler(autoscaler.ActivityPath, a.Handler())
	//	mgr.AddMetricsServerExtraHandler(autoscaler.ExplainPath, a.Handler())

	// A gateway naming a kind no profile describes learns which ones exist.
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/activity/shop/deployments/cart", nil))
	fmt.Println(rec.Code)
	fmt.Print(rec.Body.String())
	// Output:
	// 404
	// {
	//   "error": "resource \"deployments\" is not profiled; use one of: rackedclusters, samplefunctions, workergroups"
	// }
}
