package promql

// Benchmarks comparing the Store with Prometheus' own in-memory head block
// (tsdb.Head) on the same generated data, through the same storage
// interfaces and the same engine. Run them side by side with
//
//	go -C promql test . -run '^$' -bench . -benchtime 3x
//
// Reported metrics: samples/s (ingest), bytes/sample (heap growth, plus the
// head's memory-mapped chunk files, divided by samples) and ns/op per query.

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	prom "github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

const (
	benchSeries   = 1000
	benchInterval = 5 * time.Second
	benchSamples  = int(30 * time.Minute / benchInterval) // 360 per series
)

// benchQueries are the SlimFaas guide's three example triggers.
var benchQueries = []struct{ name, query string }{
	{"rps", `sum(rate(http_server_requests_seconds_count{namespace="default",job="fibonacci"}[1m]))`},
	{"queue", `max(max_over_time(slimfaas_function_queue_ready_items{function="fibonacci"}[30s]))`},
	{"p95", `histogram_quantile(0.95, sum by (le) (rate(http_server_requests_seconds_bucket{namespace="default",job="fibonacci"}[1m])))`},
}

type benchData struct {
	labels []labels.Labels
	values [][]float64 // [sample][series]
	start  int64
}

func (d *benchData) end() time.Time {
	return time.UnixMilli(d.start + int64(benchSamples-1)*benchInterval.Milliseconds())
}

var benchDataset = generateBenchData()

// generateBenchData builds 1,000 series for 50 pods of one function:
// 50 request counters, 550 histogram buckets (11 le values), 50 latency
// sums (full-precision floats, the worst case for XOR) and 350 queue
// gauges (7 functions per pod). Counters grow by a random 80..120 requests
// per 5 s; gauges random-walk and often stay put, as queues do.
func generateBenchData() *benchData {
	rng := rand.New(rand.NewPCG(1, 2))
	d := &benchData{start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()}
	les := []string{"0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "+Inf"}
	frac := []float64{0.01, 0.03, 0.1, 0.25, 0.5, 0.75, 0.9, 0.96, 0.99, 0.998, 1}
	funcs := []string{"fibonacci", "hello", "resize", "thumbnail", "ocr", "mailer", "billing"}
	var cols [][]float64 // [series][sample]
	add := func(ls labels.Labels, col []float64) {
		d.labels = append(d.labels, ls)
		cols = append(cols, col)
	}
	// counter accumulates per-interval increments into a counter column.
	counter := func(inc func(i int) float64) []float64 {
		col := make([]float64, benchSamples)
		v := 0.0
		for i := range col {
			v += inc(i)
			col[i] = v
		}
		return col
	}
	for p := range 50 {
		base := []string{"job", "fibonacci", "namespace", "default", "pod", fmt.Sprintf("fibonacci-%d", p)}
		with := func(name string, kv ...string) labels.Labels {
			return labels.FromStrings(append(append([]string{"__name__", name}, kv...), base...)...)
		}
		reqs := make([]float64, benchSamples)
		for i := range reqs {
			reqs[i] = float64(80 + rng.IntN(41))
		}
		add(with("http_server_requests_seconds_count"), counter(func(i int) float64 { return reqs[i] }))
		for k, le := range les {
			add(with("http_server_requests_seconds_bucket", "le", le), counter(func(i int) float64 { return math.Round(reqs[i] * frac[k]) }))
		}
		add(with("http_server_requests_seconds_sum"), counter(func(i int) float64 { return reqs[i] * (0.08 + rng.Float64()*0.04) }))
		for _, fn := range funcs {
			col := make([]float64, benchSamples)
			v := float64(rng.IntN(100))
			for i := range col {
				if rng.IntN(3) != 0 {
					v = max(0, v+float64(rng.IntN(11)-5))
				}
				col[i] = v
			}
			add(labels.FromStrings("__name__", "slimfaas_function_queue_ready_items", "function", fn, "namespace", "default", "pod", base[5]), col)
		}
	}
	if len(d.labels) != benchSeries {
		panic(fmt.Sprintf("generated %d series, want %d", len(d.labels), benchSeries))
	}
	for i := range benchSamples {
		row := make([]float64, len(cols))
		for j := range cols {
			row[j] = cols[j][i]
		}
		d.values = append(d.values, row)
	}
	return d
}

// ingest appends the dataset one scrape (timestamp) per transaction, reusing
// series references as Prometheus' scrape loop does.
func ingest(tb testing.TB, a storage.Appendable, d *benchData) {
	ingestScrapes(tb, a, d, len(d.values))
}

// ingestScrapes appends the dataset's first n scrapes, as ingest does.
func ingestScrapes(tb testing.TB, a storage.Appendable, d *benchData, n int) {
	refs := make([]storage.SeriesRef, len(d.labels))
	for i, row := range d.values[:n] {
		app := a.Appender(context.Background())
		ts := d.start + int64(i)*benchInterval.Milliseconds()
		for j, v := range row {
			ref, err := app.Append(refs[j], d.labels[j], ts, v)
			if err != nil {
				tb.Fatal(err)
			}
			refs[j] = ref
		}
		if err := app.Commit(); err != nil {
			tb.Fatal(err)
		}
	}
}

type benchBackend struct {
	name string
	// open returns the storage, a queryable view of it, and a closer.
	open func(tb testing.TB) (storage.Appendable, storage.Queryable, func())
	// extraBytes reports memory held outside the Go heap (mmapped files).
	extraBytes func() int64
}

func backends() []benchBackend {
	headDir := ""
	headBackend := func(name string, enc chunkenc.Encoding) benchBackend {
		return benchBackend{
			name: name,
			open: func(tb testing.TB) (storage.Appendable, storage.Queryable, func()) {
				dir, err := os.MkdirTemp("", "head")
				if err != nil {
					tb.Fatal(err)
				}
				headDir = dir
				opts := tsdb.DefaultHeadOptions()
				opts.ChunkDirRoot = dir
				opts.FloatChunkEncoding.Store(uint32(enc))
				h, err := tsdb.NewHead(nil, nil, nil, nil, opts, nil)
				if err != nil {
					tb.Fatal(err)
				}
				if err := h.Init(math.MinInt64); err != nil {
					tb.Fatal(err)
				}
				q := storage.QueryableFunc(func(mint, maxt int64) (storage.Querier, error) {
					return tsdb.NewBlockQuerier(tsdb.NewRangeHead(h, mint, maxt), mint, maxt)
				})
				return h, q, func() { _ = h.Close(); _ = os.RemoveAll(dir) }
			},
			extraBytes: func() int64 { return dirSize(headDir) },
		}
	}
	return []benchBackend{
		{
			name: "store",
			open: func(testing.TB) (storage.Appendable, storage.Queryable, func()) {
				s := NewStore(Options{Retention: -1})
				return s, s, func() {}
			},
			extraBytes: func() int64 { return 0 },
		},
		headBackend("head", chunkenc.EncXOR),
		headBackend("head-xor2", chunkenc.EncXOR2),
	}
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if info, err := e.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

func totalSamples(d *benchData) int { return len(d.values) * len(d.labels) }

func BenchmarkIngest(b *testing.B) {
	d := benchDataset
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				app, _, closeFn := be.open(b)
				b.StartTimer()
				ingest(b, app, d)
				b.StopTimer()
				closeFn()
				b.StartTimer()
			}
			b.ReportMetric(float64(totalSamples(d)*b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkBytesPerSample reports the heap growth per sample after the
// whole dataset: 360 scrapes, three full chunks per series, every head
// chunk just full.
func BenchmarkBytesPerSample(b *testing.B) { benchBytesPerSample(b, benchSamples) }

// BenchmarkBytesPerSampleMidChunk reports it after 300 scrapes, every head
// chunk half full. A store's memory goes up and down over a chunk's life
// (a head buffer sized for a full chunk, or grown by doubling, is
// emptiest when the chunk starts), so this keeps a store from looking
// smaller than it is by being measured only where its heads are full.
func BenchmarkBytesPerSampleMidChunk(b *testing.B) {
	benchBytesPerSample(b, benchSamples-samplesPerChunk/2)
}

func benchBytesPerSample(b *testing.B, scrapes int) {
	d := benchDataset
	samples := float64(scrapes * len(d.labels))
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) {
			var perSample, chunkPerSample float64
			for b.Loop() {
				before := heapInUse()
				app, _, closeFn := be.open(b)
				ingestScrapes(b, app, d, scrapes)
				if s, ok := app.(*Store); ok {
					s.Trim()
					chunkPerSample = float64(s.Stats().ChunkBytes) / samples
				}
				after := heapInUse()
				perSample = (float64(after) - float64(before) + float64(be.extraBytes())) / samples
				runtime.KeepAlive(app)
				closeFn()
			}
			b.ReportMetric(perSample, "bytes/sample")
			if chunkPerSample > 0 {
				// The encoded samples alone, without series and index.
				b.ReportMetric(chunkPerSample, "chunkbytes/sample")
			}
		})
	}
}

func BenchmarkQuery(b *testing.B) {
	d := benchDataset
	ng := prom.NewEngine(EngineOptions(time.Minute, 50_000_000, 0, nil))
	defer func() { _ = ng.Close() }()
	for _, be := range backends() {
		app, q, closeFn := be.open(b)
		ingest(b, app, d)
		for _, bq := range benchQueries {
			b.Run(bq.name+"/"+be.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					qry, err := ng.NewInstantQuery(context.Background(), q, nil, bq.query, d.end())
					if err != nil {
						b.Fatal(err)
					}
					res := qry.Exec(context.Background())
					if res.Err != nil {
						b.Fatal(res.Err)
					}
					qry.Close()
				}
			})
		}
		closeFn()
	}
}

// TestBenchBackendsAgree guards the benchmark: all backends must give the
// same answers, or the latencies compare different work.
func TestBenchBackendsAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three 360k-sample stores")
	}
	d := benchDataset
	ng := prom.NewEngine(EngineOptions(time.Minute, 50_000_000, 0, nil))
	defer func() { _ = ng.Close() }()
	answers := map[string][]string{}
	for _, be := range backends() {
		app, q, closeFn := be.open(t)
		ingest(t, app, d)
		for _, bq := range benchQueries {
			qry, err := ng.NewInstantQuery(context.Background(), q, nil, bq.query, d.end())
			if err != nil {
				t.Fatal(err)
			}
			res := qry.Exec(context.Background())
			answers[be.name] = append(answers[be.name], res.String())
			qry.Close()
		}
		closeFn()
	}
	t.Logf("answers: %v", answers)
	for name, got := range answers {
		if fmt.Sprint(got) != fmt.Sprint(answers["head"]) {
			t.Errorf("%s answers %v, head answers %v", name, got, answers["head"])
		}
	}
	if v := answers["store"]; len(v) != 3 || v[0] == "" {
		t.Errorf("store answers %v", v)
	}
}

// The paired benchmarks alternate between the store and the head inside
// every iteration, so load from other processes hits both alike. They
// report the median time of each side and the median of the per-iteration
// ratios store/head (below 1 means the store needs less time); medians keep
// a burst of load on a shared machine from deciding the result.

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

type pairedTimes struct{ store, head, ratio []float64 }

func (p *pairedTimes) add(store, head time.Duration) {
	p.store = append(p.store, float64(store.Nanoseconds()))
	p.head = append(p.head, float64(head.Nanoseconds()))
	p.ratio = append(p.ratio, float64(store)/float64(head))
}

func BenchmarkPairedIngest(b *testing.B) {
	d := benchDataset
	bes := backends()[:2] // store, head (default encoding)
	var times pairedTimes
	for b.Loop() {
		var spent [2]time.Duration
		for i, be := range bes {
			app, _, closeFn := be.open(b)
			start := time.Now()
			ingest(b, app, d)
			spent[i] = time.Since(start)
			closeFn()
		}
		times.add(spent[0], spent[1])
	}
	n := float64(totalSamples(d)) * 1e9
	b.ReportMetric(n/median(times.store), "store-samples/s")
	b.ReportMetric(n/median(times.head), "head-samples/s")
	b.ReportMetric(median(times.ratio), "time-ratio")
}

func BenchmarkPairedQuery(b *testing.B) {
	d := benchDataset
	ng := prom.NewEngine(EngineOptions(time.Minute, 50_000_000, 0, nil))
	defer func() { _ = ng.Close() }()
	bes := backends()[:2]
	var qs [2]storage.Queryable
	for i, be := range bes {
		app, q, closeFn := be.open(b)
		defer closeFn()
		ingest(b, app, d)
		qs[i] = q
	}
	for _, bq := range benchQueries {
		b.Run(bq.name, func(b *testing.B) {
			var times pairedTimes
			for b.Loop() {
				var spent [2]time.Duration
				for i, q := range qs {
					start := time.Now()
					qry, err := ng.NewInstantQuery(context.Background(), q, nil, bq.query, d.end())
					if err != nil {
						b.Fatal(err)
					}
					if res := qry.Exec(context.Background()); res.Err != nil {
						b.Fatal(res.Err)
					}
					qry.Close()
					spent[i] = time.Since(start)
				}
				times.add(spent[0], spent[1])
			}
			b.ReportMetric(median(times.store), "store-ns/query")
			b.ReportMetric(median(times.head), "head-ns/query")
			b.ReportMetric(median(times.ratio), "time-ratio")
		})
	}
}

// BenchmarkSeriesOverhead measures what a series costs the heap besides
// what the store charges for its labels and chunks (the seriesOverhead the
// store charges against Options.MaxBytes on top of them): 100,000 series
// of scrape-like labels (pod, namespace, workload, code, method), each
// with 12 samples, in the store, the heap growth per series minus its
// label charge (its symbol ids and its share of the symbol table) and
// what the store charges for its chunks (their bytes and the head
// buffer's capacity). label-bytes/series is what the labels would take
// uninterned, for comparison with label-charge/series.
func BenchmarkSeriesOverhead(b *testing.B) {
	const n = 100_000
	lsets := make([]labels.Labels, n)
	for i := range lsets {
		lsets[i] = labels.FromStrings("__name__", "http_requests_total", "code", fmt.Sprint(200+i%5), "method", "GET",
			"namespace", "default", "pod", fmt.Sprintf("web-%d", i/5), "workload", "web")
	}
	var overhead, labelBytes, labelCharge, chunkBytes float64
	for b.Loop() {
		before := heapInUse()
		s := NewStore(Options{Retention: -1, MaxSeries: -1, MaxBytes: -1})
		for t := range 12 {
			app := s.Appender(context.Background())
			for i, ls := range lsets {
				if _, err := app.Append(0, ls, int64(t)*5000, float64(t*i)); err != nil {
					b.Fatal(err)
				}
			}
			if err := app.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		after := heapInUse()
		labelBytes = 0
		for _, ls := range lsets {
			labelBytes += float64(ls.ByteSize()) / n
		}
		// What the store charges for chunks (their bytes and the head
		// buffers' spare capacity) and for labels (symbol ids and
		// symbols).
		var charged, ids int
		s.eachSeries(func(ser *memSeries) {
			charged += ser.chunkBytes()
			ids += ser.labelsEnd()
		})
		chunkBytes = float64(charged) / n
		labelCharge = float64(int64(ids)+s.syms.cost()) / n
		overhead = (float64(after)-float64(before))/n - labelCharge - chunkBytes
		runtime.KeepAlive(s)
	}
	b.ReportMetric(overhead, "overhead-bytes/series")
	b.ReportMetric(labelBytes, "label-bytes/series")
	b.ReportMetric(labelCharge, "label-charge/series")
	b.ReportMetric(chunkBytes, "chunk-bytes/series")
	b.ReportMetric(seriesOverhead, "charged-overhead/series")
}
