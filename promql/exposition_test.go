package promql

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// expfmtSeries is how the scraper read an exposition before it used
// Prometheus' parser (in earlier releases): prometheus/common's text
// parser into client objects, then flattened as Prometheus ingests them.
// It is the reference of TestScrapeParseDifferential.
func expfmtSeries(body string, requested map[string]struct{}, target labels.Labels) ([]string, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	seen := map[uint64]bool{}
	var out []string
	b := labels.NewBuilder(labels.EmptyLabels())
	add := func(name string, m *dto.Metric, extra []string, v float64) {
		if _, ok := requested[name]; !ok {
			return
		}
		b.Reset(labels.EmptyLabels())
		for _, lp := range m.GetLabel() {
			n := lp.GetName()
			if target.Has(n) {
				n = "exported_" + n
			}
			b.Set(n, lp.GetValue())
		}
		for i := 0; i+1 < len(extra); i += 2 {
			b.Set(extra[i], extra[i+1])
		}
		target.Range(func(l labels.Label) { b.Set(l.Name, l.Value) })
		b.Set(model.MetricNameLabel, name)
		ls := b.Labels()
		if seen[ls.Hash()] {
			return
		}
		seen[ls.Hash()] = true
		out = append(out, sampleLine(ls, v))
	}
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				add(name, m, nil, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add(name, m, nil, m.GetGauge().GetValue())
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					add(name, m, []string{model.QuantileLabel, formatFloat(q.GetQuantile())}, q.GetValue())
				}
				add(name+"_sum", m, nil, s.GetSampleSum())
				add(name+"_count", m, nil, float64(s.GetSampleCount()))
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				h := m.GetHistogram()
				count := float64(h.GetSampleCount())
				sawInf := false
				for _, bk := range h.GetBucket() {
					sawInf = sawInf || math.IsInf(bk.GetUpperBound(), 1)
					add(name+"_bucket", m, []string{model.BucketLabel, formatFloat(bk.GetUpperBound())}, float64(bk.GetCumulativeCount()))
				}
				if !sawInf {
					add(name+"_bucket", m, []string{model.BucketLabel, "+Inf"}, count)
				}
				add(name+"_sum", m, nil, h.GetSampleSum())
				add(name+"_count", m, nil, count)
			default:
				add(name, m, nil, m.GetUntyped().GetValue())
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

func sampleLine(ls labels.Labels, v float64) string { return fmt.Sprintf("%s %v", ls, v) }

// parsedSeries is how the scraper reads an exposition now: readExposition
// with lim, and the scraper's deduplication. window, when not 0, replaces
// the read buffer's size, so that windows end inside lines.
func parsedSeries(body string, requested map[string]struct{}, target labels.Labels, lim scrapeLimits, window int) ([]string, error) {
	seen := map[uint64]bool{}
	var out []string
	add := func(ls labels.Labels, v float64) error {
		if !seen[ls.Hash()] {
			seen[ls.Hash()] = true
			out = append(out, sampleLine(ls, v))
		}
		return nil
	}
	var err error
	if window == 0 {
		err = readExposition(strings.NewReader(body), lim, requested, target, add)
	} else {
		e := &exposition{lim: lim, names: requested, target: target, add: add, buf: make([]byte, window), lb: labels.NewBuilder(labels.EmptyLabels())}
		err = e.run(iotest.HalfReader(strings.NewReader(body)))
	}
	sort.Strings(out)
	return out, err
}

// unlimited bounds nothing: the differential test compares parsing only.
var unlimited = scrapeLimits{maxLine: math.MaxInt32}

// differentialCorpus is every exposition the scraper's tests and the
// hostile suite serve, and the text format's corners.
func differentialCorpus() map[string]string {
	corpus := map[string]string{
		"scrape_test":      testExposition,
		"typical pod":      typicalExposition(),
		"thousand targets": "# TYPE http_requests_total counter\nhttp_requests_total{code=\"200\"} 1\nhttp_requests_total{code=\"500\"} 2\nignored 3\n",
		"staleness":        "queue_items{q=\"x\"} 1\nqueue_items{q=\"y\"} 2\n",
		"no final newline": "queue_items 1\nqueue_items{q=\"a\"} 2",
		"bucket bounds written every way": "# TYPE lat histogram\n" +
			`lat_bucket{le="0.1"} 1` + "\n" + `lat_bucket{le="1.0"} 2` + "\n" + `lat_bucket{le="1e1"} 3` + "\n" +
			`lat_bucket{le="+Inf"} 4` + "\nlat_sum 3\nlat_count 4\n",
		"quantiles written every way": "# TYPE rpc summary\n" + `rpc{quantile="0.50"} 1` + "\n" + `rpc{quantile="9e-1"} 2` + "\n" +
			`rpc{quantile="1"} 3` + "\nrpc_sum 3\nrpc_count 4\n",
		"a histogram per label set": "# TYPE lat histogram\n" +
			`lat_bucket{route="/a",le="1"} 1` + "\n" + `lat_bucket{route="/a",le="+Inf"} 2` + "\n" + `lat_sum{route="/a"} 1` + "\n" + `lat_count{route="/a"} 2` + "\n" +
			`lat_bucket{route="/b",le="1"} 3` + "\n" + `lat_bucket{route="/b",le="+Inf"} 4` + "\n" + `lat_sum{route="/b"} 2` + "\n" + `lat_count{route="/b"} 4` + "\n",
		"a line break inside a label value": "esc{nl=\"a\nb\"} 1\n",
		"escapes in values and help":        "# HELP esc A \\\\ help\\nline.\n# TYPE esc gauge\n" + `esc{path="C:\\dir",quote="say \"hi\"",nl="a\nb"} 1` + "\n",
		"target label names":                `queue_items{pod="inner",namespace="other",q="x"} 1` + "\n",
		"empty label values":                `queue_items{a="",b="x"} 1` + "\n",
		"whitespace between tokens":         "queue_items  {  a = \"1\" , b=\"2\" , }   7   1700000000000\n\t\n  queue_items{a=\"3\"}\t8\n",
		"UTF-8 names, quoted":               `{"my.metric", "läbel"="v"} 1` + "\n" + `{"my.metric"} 2` + "\n",
		"untyped and TYPE untyped":          "# TYPE u untyped\nu 1\nv{x=\"y\"} 2\n",
		"comments and blank lines":          "# just a comment\n\n#\n# HELP queue_items items\nqueue_items 3\n\n",
		"special values":                    "queue_items{v=\"nan\"} NaN\nqueue_items{v=\"inf\"} +Inf\nqueue_items{v=\"-inf\"} -Inf\nqueue_items{v=\"exp\"} 1.5e3\n",
		"timestamps":                        "queue_items{t=\"f\"} 1 99999999999999\nqueue_items{t=\"p\"} 1 -99999999999999\n",
		"the same series twice":             "queue_items{a=\"1\"} 1\nqueue_items{a=\"1\"} 2\n",
		"counter and gauge mixed":           "# TYPE c counter\nc_total 5\n# TYPE g gauge\ng 1\ng{x=\"y\"} 2\n",
		// A server that ignores the Accept header and answers OpenMetrics:
		// read as the text format, as before.
		"OpenMetrics":                  "# TYPE req counter\n# UNIT req requests\n# HELP req Requests.\nreq_total{code=\"200\"} 3\nreq_created{code=\"200\"} 1.7e+09\n# EOF\n",
		"OpenMetrics with an exemplar": "# TYPE req counter\nreq_total{code=\"200\"} 3 # {trace_id=\"abc\"} 1.0\n# EOF\n",
	}
	// The hostile suite's content inputs (e2e/hostile/scrape_test.go).
	for name, body := range map[string]string{
		"malformed":                 "hostile_load{{{ 1\n",
		"not a number":              "hostile_load one\n",
		"unclosed quote":            `hostile_load{a="1} 1` + "\n",
		"binary garbage":            "\x0a\xff\x00\x13\x37\xde\xad\xbe\xef",
		"text as protobuf":          `hostile_load{via="proto"} 1` + "\n",
		"NaN and infinities":        `hostile_load{v="nan"} NaN` + "\n" + `hostile_load{v="inf"} +Inf` + "\n",
		"timestamp past int64":      "hostile_load 1 99999999999999999999\n",
		"1e400":                     "hostile_load 1e400\n",
		"TYPE contradicting":        "# TYPE hostile_load histogram\nhostile_load 1\n",
		"invalid UTF-8":             "hostile_load{a=\"\xff\xfe\"} 1\n",
		"a long metric name":        strings.Repeat("m", 100<<10) + " 1\n",
		"the same series 100 times": strings.Repeat(`hostile_load{a="1"} 1`+"\n", 100),
	} {
		corpus["hostile: "+name] = body
	}
	return corpus
}

// knownDifferences are the corpus entries where Prometheus' parser and the
// old one disagree, each with why the new reading is kept. Every entry must
// still differ: a difference that goes away is removed from the list.
var knownDifferences = map[string]string{
	// The format asks for a line break after the last line; Prometheus
	// does without, expfmt refused.
	"no final newline": "",
	// Prometheus' lexer takes only digits as a timestamp; expfmt took a
	// negative one (and the scraper ignored it).
	"timestamps": "",
	// expfmt reads a histogram's samples into one histogram and writes
	// _bucket, _sum and _count back, whatever the lines were: a plain
	// "hostile_load 1" under TYPE histogram became hostile_load_bucket
	// {le="+Inf"} 0, _sum 0 and _count 0. Prometheus stores the line as
	// written.
	"hostile: TYPE contradicting": "",
	// expfmt reads a repeated series of a gauge as two samples of the
	// family and keeps both; the scraper keeps the first either way, so
	// both store the same, but expfmt refuses a repeated label set in a
	// summary or histogram only. (No difference: listed for the reader.)
}

// TestScrapeParseDifferential: over every exposition the tests and the
// hostile suite serve, the scraper's reading with Prometheus' text parser
// stores exactly the series (names, labels, values) the old reading with
// prometheus/common stored, or fails where it failed, whether every name
// is requested or a few; the exceptions are knownDifferences. The same
// bodies read through windows of 16 and 64 bytes, which end inside nearly
// every line, give the same outcome as one window.
func TestScrapeParseDifferential(t *testing.T) {
	target := labels.FromStrings("namespace", "default", "pod", "p1", "workload", "fn")
	few := map[string]struct{}{}
	for _, n := range append(typicalRequested, "hostile_load", "lat_bucket", "rpc", "esc") {
		few[n] = struct{}{}
	}
	type outcome struct {
		Failed bool
		Series []string
	}
	result := func(series []string, err error) outcome {
		if err != nil {
			return outcome{Failed: true}
		}
		return outcome{Series: series}
	}
	for name, body := range differentialCorpus() {
		t.Run(name, func(t *testing.T) {
			all := map[string]struct{}{}
			for _, n := range namesIn(body) {
				all[n] = struct{}{}
			}
			differs := false
			for _, requested := range []map[string]struct{}{all, few} {
				old, oldErr := expfmtSeries(body, requested, target)
				got, err := parsedSeries(body, requested, target, unlimited, 0)
				if diff := cmp.Diff(result(old, oldErr), result(got, err)); diff != "" {
					differs = true
					if _, known := knownDifferences[name]; known {
						t.Logf("known difference (-expfmt +textparse):\n%s(expfmt error: %v; textparse error: %v)", diff, oldErr, err)
					} else {
						t.Errorf("textparse reading differs from expfmt's (-expfmt +textparse):\n%s(expfmt error: %v; textparse error: %v)", diff, oldErr, err)
					}
				}
				for _, window := range []int{16, 64} {
					small, smallErr := parsedSeries(body, requested, target, unlimited, window)
					if diff := cmp.Diff(result(got, err), result(small, smallErr)); diff != "" {
						t.Errorf("windows of %d bytes (-one window +small windows):\n%s(error %v)", window, diff, smallErr)
					}
				}
			}
			if _, known := knownDifferences[name]; known && !differs {
				t.Errorf("listed in knownDifferences but both readings agree: remove it from the list")
			}
		})
	}
}

// namesIn are the metric names of a body, as both readings could store
// them: every name that starts a line or is quoted first in braces, with
// the suffixes expfmt writes.
func namesIn(body string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimLeft(line, " \t")
		if line == "" || line[0] == '#' {
			continue
		}
		if name, ok := seriesName([]byte(line)); ok {
			n := string(name)
			out = append(out, n, n+"_bucket", n+"_sum", n+"_count")
		}
	}
	return out
}
