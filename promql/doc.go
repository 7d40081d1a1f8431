// Package promql is scaleplane's metrics pipeline for trigger-based
// autoscaling: it scrapes the pods of profiled workloads, keeps what
// triggers ask for in a compact in-memory store, and evaluates PromQL with
// Prometheus' own engine, so a query means exactly what it means in
// Prometheus and Grafana.
//
// # What it owns
//
//   - Store (NewStore, Options): series in Gorilla/XOR2-compressed chunks
//     from Prometheus' tsdb/chunkenc (native histograms in histogram
//     chunks), 30 minutes of retention by default (Trim, run by the scraper
//     every cycle, and clamped on every query), a cap of 100,000 series
//     (ErrSeriesLimit, Stats.RefusedSeries), and an inverted index (label
//     name and value to series, as Prometheus' postings) so that a query
//     costs what it selects, not what the store holds. A byte budget
//     (Options.MaxBytes, ErrBytesLimit) bounds labels, bookkeeping and
//     chunks together. It implements storage.Storage (Queryable,
//     Appendable, AppendableV2), which is what the engine and Prometheus'
//     promqltest need. Store.Append(labels, t, v) is the one-sample
//     ingestion path.
//   - Registry (Store.Registry, Store.Request, Store.RequestQuery,
//     Registry.SetOwner, MetricNames): the metric names some trigger or
//     debug query asked for. The scraper keeps only those. A workload's
//     triggers are registered with SetOwner so names they stop using are
//     dropped; queries without an owner (debug queries) add names that
//     leave when nobody asked for them over the retention.
//   - Fair (NewFair, FairOptions, FairSource): evaluation slots shared
//     among namespaces after the API server's priority and fairness (a
//     queue per namespace, round-robin dispatch, a concurrency share) and
//     each namespace's budget of samples and evaluation time per minute;
//     a namespace over its share or budget waits or gets a
//     *ThrottledError, the others keep their pace. The store has a share
//     per namespace too (Options.MaxSeriesPerNamespace,
//     Options.MaxBytesPerNamespace), and a target that goes away takes its
//     series with it (Store.Delete).
//   - Evaluator (NewEvaluator, EvaluatorOptions) and Remote (NewRemote,
//     RemoteOptions): the two implementations of Source, whose
//     Eval(ctx, query, at, vars) returns one Result. The Evaluator's engine
//     parses a query string once and evaluates copies of the tree, and
//     its parser requests the query's names on the way. Result.Kind tells a
//     value from no data (never 0), NaN and ±Inf; a query that is not one
//     number fails with *ShapeError telling the user to aggregate; a query
//     that is wrong fails with *QueryError. Expand substitutes ${namespace},
//     ${name} and other placeholders with escaping.
//   - Scraper (NewScraper, ScraperOptions): a controller-runtime manager
//     Runnable scraping every Target from a Discoverer each Interval, with
//     bounded concurrency, a per-scrape timeout, and Prometheus' body size,
//     sample and label limits (a scrape over one fails whole), parsing
//     the text format as it arrives with Prometheus' textparse and
//     skipping unrequested names before building their labels, adding the
//     target's labels and writing staleness markers when series or targets
//     disappear. PodDiscoverer and PodTarget turn annotated pods
//     (prometheus.io/scrape, scheme, port, path) of Workloads into targets.
//   - Debug endpoints (NewDebugHandler, DebugOptions, ExtraHandlers): POST
//     /debug/promql/eval and GET /debug/store, mounted as extra handlers of
//     the manager's metrics server so they sit behind the same
//     authentication and authorization as /metrics. Outside dev mode they
//     refuse to build unless a filter is given or the metrics server
//     applies its own (ServerFiltered).
//
// # What it must not do
//
// It knows nothing about scaleplane's profiles, scale configs or replica
// decisions: callers hand it Workloads or Targets, queries and placeholder
// values, and get numbers back. The wiring into the manager (adding the
// Scraper, mounting the debug handler as a metrics server extra handler)
// belongs to cmd/scaleplane. It never turns NaN, ±Inf or no data into 0:
// what to do with them is the autoscaler's decision.
package promql
