package hostile

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/promql"
)

// The metric names the scraped workload's triggers request: only requested
// names are kept by the store, so every hostile target serves one of them.
const (
	metricLoad   = "hostile_load"
	metricBomb   = "hostile_bomb"
	metricLabels = "hostile_labels"
)

// maxScrapeBody is the scraper's default bound on one response
// (promql.ScraperOptions.MaxBodyBytes).
const maxScrapeBody = 10 << 20

// target is one hostile scrape target: a pod at 127.0.0.1 whose
// prometheus.io/path names a handler of the suite's exporter.
type target struct {
	name    string
	handler http.HandlerFunc
	// port overrides the pod's prometheus.io/port annotation.
	port string
	want targetResult
	// slowOK: on a machine too loaded to read the body within the scrape
	// timeout, "too slow" is as good an outcome as want (the process
	// survives and keeps nothing either way); the figures name it.
	slowOK bool
}

// targetResult is the scraper's account of a target (GET /debug/store):
// its health and the kind of its last error, and whether the process was
// still running once it had been scraped.
type targetResult struct {
	Survived bool
	Health   promql.Health
	Problem  string
}

func up() targetResult { return targetResult{Survived: true, Health: promql.HealthUp} }
func down(problem string) targetResult {
	return targetResult{Survived: true, Health: promql.HealthDown, Problem: problem}
}

// problemOf sorts the scraper's error messages (promql/scrape.go) into
// kinds, so that a table can name the one it expects.
func problemOf(lastError string) string {
	switch {
	case lastError == "":
		return ""
	case strings.Contains(lastError, "sample limit exceeded"):
		return "sample limit"
	case strings.Contains(lastError, "label limit exceeded"):
		return "label limit"
	case strings.Contains(lastError, "exceeds"):
		return "too large"
	case strings.Contains(lastError, "within"):
		return "too slow"
	case strings.Contains(lastError, "parse metrics"):
		return "malformed"
	case strings.Contains(lastError, "server returned"):
		return "status"
	case strings.Contains(lastError, "annotation"):
		return "bad annotation"
	case strings.Contains(lastError, "connection refused"):
		return "refused"
	}
	return "other: " + lastError
}

// scrapeSetup is the exporter serving every target, and the count of the
// targets' pods.
type scrapeSetup struct {
	port string
	mux  *http.ServeMux
	pods int
}

// scraped returns the exporter every target is served by, and makes the
// autoscaled workload whose triggers request the hostile metric names, so
// that its pods are scraped. It is made once for every scrape group.
func (s *suite) scraped(t *testing.T) *scrapeSetup {
	t.Helper()
	if s.scrape != nil {
		return s.scrape
	}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	// The whole suite's cleanup: targets live through every group. Closing
	// the connections first ends the handlers that wait for the scraper to
	// give up, which Close waits for.
	s.top.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	wl := framework.RackedCluster(s.ns, "scraped", 1, 1)
	q := func(m string) string { return fmt.Sprintf(`sum(%s{namespace="${namespace}"})`, m) }
	wl.Object["spec"].(obj)["scaleConfig"] = obj{"minReplicas": 1, "maxReplicas": 3, "triggers": list{
		trigger("load", q(metricLoad)), trigger("bomb", q(metricBomb)), trigger("labels", q(metricLabels)),
	}}
	if err := cluster.Client.Create(context.Background(), wl); err != nil {
		t.Fatalf("create the scraped workload: %v", err)
	}
	s.scrape = &scrapeSetup{port: port, mux: mux}
	return s.scrape
}

// runTargets serves each target, creates its pod, waits until the scraper
// has tried every target at least twice, and records each one's health.
func (s *suite) runTargets(t *testing.T, targets []target, settle func(t *testing.T, st promql.StoreSummary) bool) {
	t.Helper()
	set := s.scraped(t)
	urls := map[string]string{}
	first := map[string]time.Time{}
	for _, tg := range targets {
		set.pods++
		path := fmt.Sprintf("/t%03d", set.pods)
		set.mux.HandleFunc(path, tg.handler)
		port := set.port
		if tg.port != "" {
			port = tg.port
		}
		urls[tg.name] = "http://" + net.JoinHostPort("127.0.0.1", port) + path
		s.scrapePod(t, fmt.Sprintf("scraped-a-%d", set.pods), port, path)
	}
	// Twice: a target's first scrape may have started before its handler
	// had anything to say. The wait ends early when the process is gone.
	var summary promql.StoreSummary
	last := "no store summary read yet"
	err := within(2*framework.DefaultTimeout, func(ctx context.Context) error {
		if s.bin.alive() != nil {
			return nil
		}
		var err error
		if summary, err = s.storeSummary(ctx); err != nil {
			return fmt.Errorf("%s; then: %w", last, err)
		}
		byURL := map[string]promql.TargetHealth{}
		for _, h := range summary.Targets {
			byURL[h.URL] = h
		}
		for name, url := range urls {
			h, ok := byURL[url]
			switch {
			case !ok || h.LastScrape.IsZero():
				last = fmt.Sprintf("target %q (%s) not scraped yet; discovery error %q", name, url, summary.DiscoveryError)
				return errors.New(last)
			case first[name].IsZero():
				first[name] = h.LastScrape
				last = fmt.Sprintf("target %q scraped once", name)
				return errors.New(last)
			case !h.LastScrape.After(first[name]):
				last = fmt.Sprintf("target %q not scraped a second time", name)
				return errors.New(last)
			}
		}
		if settle != nil && !settle(t, summary) {
			last = "store not settled"
			return errors.New(last)
		}
		return nil
	})
	survived := s.bin.alive() == nil
	if err != nil && survived {
		t.Fatalf("targets not scraped: %v", err)
	}
	byURL := map[string]promql.TargetHealth{}
	for _, h := range summary.Targets {
		byURL[h.URL] = h
	}
	for _, tg := range targets {
		h := byURL[urls[tg.name]]
		got := targetResult{Survived: survived}
		if survived {
			got.Health, got.Problem = h.Health, problemOf(h.LastError)
		}
		if tg.slowOK && got == down("too slow") {
			t.Logf("target %q: read too slowly on this machine, accepted: %+v", tg.name, h)
			got = tg.want
		}
		if got != tg.want {
			t.Logf("target %q: %+v", tg.name, h)
		}
		if survived && h.Health == promql.HealthDown {
			s.mu.Lock()
			s.scrapeDown[problemOf(h.LastError)]++
			s.mu.Unlock()
		}
		s.expect(t, areaScrape, tg.name, tg.want, got, false)
	}
}

// scrapePod creates a running, ready pod of the scraped workload at
// 127.0.0.1 whose annotations point the scraper at port and path.
func (s *suite) scrapePod(t *testing.T, name, port, path string) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name,
			Labels:      map[string]string{"samples.scaleplane.io/cluster": "scraped", "samples.scaleplane.io/rack": "a"},
			Annotations: map[string]string{promql.AnnotationScrape: "true", promql.AnnotationPort: port, promql.AnnotationPath: path}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app"}}},
	}
	if err := cluster.Client.Create(ctx, pod); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1", PodIPs: []corev1.PodIP{{IP: "127.0.0.1"}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if err := cluster.Client.Status().Update(ctx, pod); err != nil {
		t.Fatalf("set pod %s status: %v", name, err)
	}
}

func (s *suite) storeSummary(ctx context.Context) (promql.StoreSummary, error) {
	var sum promql.StoreSummary
	res, data, err := s.call(ctx, http.MethodGet, promql.DebugStorePath, s.token, nil)
	if err != nil {
		return sum, err
	}
	if res.Status != http.StatusOK {
		return sum, fmt.Errorf("GET %s: %d %.300s", promql.DebugStorePath, res.Status, data)
	}
	return sum, json.Unmarshal(data, &sum)
}

// exposition serves a fixed text page.
func exposition(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = io.WriteString(w, body)
	}
}

// scrapeTransportInputs: targets that are slow, endless, huge, silent,
// failing or redirecting. Each must cost the scraper at most its timeout
// and its body limit, and be reported down with why.
func (s *suite) scrapeTransportInputs(t *testing.T) {
	var redirected atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		redirected.Add(1)
		_, _ = fmt.Fprintf(w, "%s 1\n", metricLoad)
	}))
	t.Cleanup(elsewhere.Close)
	// A port nothing listens on: taken and released.
	closed := fmt.Sprint(framework.FreePort(t))
	s.runTargets(t, []target{
		{name: "healthy (control)", handler: exposition(metricLoad + " 1\n"), want: up()},
		{name: "drips a byte every 100 ms", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			for {
				if _, err := io.WriteString(w, "#"); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		}, want: down("too slow")},
		{name: "endless body", handler: func(w http.ResponseWriter, r *http.Request) {
			line := []byte(strings.Repeat("# endless\n", 1000))
			for r.Context().Err() == nil {
				if _, err := w.Write(line); err != nil {
					return
				}
			}
		}, want: down("too large")},
		{name: "50 MB body with its length", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(50<<20))
			_, _ = io.Copy(w, io.LimitReader(repeat("# huge\n"), 50<<20))
		}, want: down("too large")},
		{name: "gzip bomb (10 KB expanding to 1 GB)", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			_, _ = io.Copy(gz, io.LimitReader(repeat("# bomb\n"), 1<<30))
			_ = gz.Close()
		}, want: down("too large")},
		{name: "never answers", handler: func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, want: down("too slow")},
		{name: "headers, then nothing", handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, want: down("too slow")},
		{name: "answers 500", handler: func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", 500) }, want: down("status")},
		{name: "redirects elsewhere (a second loopback server stands for any other address)", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+"/metrics", http.StatusFound)
		}, want: down("status")},
		{name: "port annotation out of range", port: "99999", handler: exposition(""), want: down("bad annotation")},
		{name: "port nothing listens on", port: closed, handler: exposition(""), want: down("refused")},
	}, nil)
	// No redirect was followed: the other server was never asked.
	s.expect(t, areaScrape, "redirect not followed", int64(0), redirected.Load(), false)
}

// scrapeContentInputs: expositions that parse badly or mean nothing.
func (s *suite) scrapeContentInputs(t *testing.T) {
	dup := strings.Repeat(metricLoad+`{a="1"} 1`+"\n", 100000)
	s.runTargets(t, []target{
		{name: "malformed exposition", handler: exposition("hostile_load{{{ 1\n"), want: down("malformed")},
		{name: "a value that is not a number", handler: exposition(metricLoad + " one\n"), want: down("malformed")},
		{name: "label without a closing quote", handler: exposition(metricLoad + `{a="1} 1` + "\n"), want: down("malformed")},
		{name: "binary garbage", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/vnd.google.protobuf")
			_, _ = w.Write([]byte{0x0a, 0xff, 0x00, 0x13, 0x37, 0xde, 0xad, 0xbe, 0xef})
		}, want: down("malformed")},
		{name: "text under a protobuf content type (read as text)", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited")
			_, _ = io.WriteString(w, metricLoad+`{via="proto"} 1`+"\n")
		}, want: up()},
		// Every sample of a requested name counts against
		// metrics.sampleLimit (10,000), repeats included, as in
		// Prometheus.
		{name: "the same series 100,000 times", handler: exposition(dup), want: down("sample limit")},
		// Kept once: the scraper keeps the first sample of a series.
		{name: "the same series 1,000 times", handler: exposition(dup[:len(dup)/100]), want: up()},
		{name: "NaN, +Inf and -Inf values", handler: exposition(metricLoad + `{v="nan"} NaN` + "\n" + metricLoad + `{v="inf"} +Inf` + "\n" + metricLoad + `{v="-inf"} -Inf` + "\n"), want: up()},
		{name: "a timestamp far in the future (ignored)", handler: exposition(metricLoad + `{t="future"} 1 99999999999999` + "\n"), want: up()},
		// Prometheus' text parser takes only digits as a timestamp.
		{name: "a negative timestamp", handler: exposition(metricLoad + `{t="past"} 1 -99999999999999` + "\n"), want: down("malformed")},
		{name: "a timestamp past int64", handler: exposition(metricLoad + " 1 99999999999999999999\n"), want: down("malformed")},
		{name: "a value of 1e400", handler: exposition(metricLoad + " 1e400\n"), want: down("malformed")},
		// Stored as written, as Prometheus stores it.
		{name: "TYPE line contradicting the samples", handler: exposition("# TYPE hostile_load histogram\nhostile_load 1\n"), want: up()},
		// No trigger requests it: skipped unread.
		{name: "a metric name of 100 KB", handler: exposition(strings.Repeat("m", 100<<10) + " 1\n"), want: up()},
		{name: "a requested series of 1 MiB", handler: exposition(metricLoad + `{big="` + strings.Repeat("v", 1<<20) + `"} 1` + "\n"), want: down("label limit")},
		{name: "a line break inside a label value", handler: exposition(metricLoad + "{a=\"x\ny\"} 1\n"), want: down("malformed")},
		{name: "a NUL byte", handler: exposition(metricLoad + " 1\n\x00\n"), want: down("malformed")},
		{name: "invalid UTF-8 in a label value", handler: exposition(metricLoad + "{a=\"\xff\xfe\"} 1\n"), want: down("malformed")},
	}, nil)
}

// scrapeLabelInputs: label bombs, thousands of labels on a series and
// label values of a megabyte that change every scrape, so that every
// scrape makes new series.
func (s *suite) scrapeLabelInputs(t *testing.T) {
	var labels strings.Builder
	labels.WriteString(metricLabels + "{")
	for i := range 5000 {
		fmt.Fprintf(&labels, "l%d=\"v\",", i)
	}
	labels.WriteString("} 1\n")
	// Three targets, each serving 8 series with label values of 1 MiB (8
	// MiB, within the body limit) that change every scrape: new series
	// every time, 24 MiB of labels per scrape interval.
	var churn atomic.Int64
	churning := func(w http.ResponseWriter, _ *http.Request) {
		n := churn.Add(1)
		bw := bufio.NewWriter(w)
		for i := range 8 {
			fmt.Fprintf(bw, "%s{big=\"%d-%d-%s\"} 1\n", metricLabels, n, i, strings.Repeat("v", 1<<20))
		}
		_ = bw.Flush()
	}
	const churned = 36 // 288 MiB of label values, over the memory limit
	// Over metrics.labelLimit (64) and metrics.labelValueLengthLimit
	// (4096): refused before anything is stored.
	s.runTargets(t, []target{
		{name: "5,000 labels on one series", handler: exposition(labels.String()), want: down("label limit")},
		{name: "label values of 1 MiB, new ones every scrape (1 of 3)", handler: churning, want: down("label limit")},
		{name: "label values of 1 MiB, new ones every scrape (2 of 3)", handler: churning, want: down("label limit")},
		{name: "label values of 1 MiB, new ones every scrape (3 of 3)", handler: churning, want: down("label limit")},
	}, func(t *testing.T, st promql.StoreSummary) bool {
		// Long enough for the churn to have served more label data than
		// the memory limit, were it all kept.
		return churn.Load() >= churned
	})
	t.Logf("%d scrapes of the churning targets", churn.Load())
}

// scrapeStoreInputs: targets within every scrape limit that make new
// series of the longest label values allowed (4 KiB) on every scrape, 8
// MiB of labels per target and scrape, kept for the retention's 30
// minutes: the store's byte budget (metrics.maxStoreBytes, or first the
// namespace's share of it, metrics.maxStoreBytesPerNamespace) must refuse
// them once full, the targets staying up (the store refuses series, the
// scrape worked), and the process stay within its memory.
func (s *suite) scrapeStoreInputs(t *testing.T) {
	var churn atomic.Int64
	churning := func(w http.ResponseWriter, _ *http.Request) {
		n := churn.Add(1)
		bw := bufio.NewWriter(w)
		for i := range 2000 {
			v := fmt.Sprintf("%d-%d-", n, i)
			fmt.Fprintf(bw, "%s{big=\"%s%s\"} 1\n", metricLabels, v, strings.Repeat("v", 4096-len(v)))
		}
		_ = bw.Flush()
	}
	s.runTargets(t, []target{
		{name: "label values of 4 KiB, new ones every scrape (1 of 2)", handler: churning, want: up()},
		{name: "label values of 4 KiB, new ones every scrape (2 of 2)", handler: churning, want: up()},
		// The noisy neighbour's store hog (noisy_test.go): few series,
		// each of many long labels, new every scrape.
		{name: "128 series of 8 labels of 4,000 bytes, new ones every scrape", handler: hogHandler(metricLabels), want: up()},
	}, func(t *testing.T, st promql.StoreSummary) bool {
		// Until the store, or the namespace's share of it, is full and
		// refuses series.
		return st.RefusedSeriesForBytes+st.RefusedSeriesForNamespaceBytes > 0
	})
	type budgetResult struct{ Survived, Refused, WithinBudget bool }
	var got budgetResult
	if s.bin.alive() == nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		st, err := s.storeSummary(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Past the budget by at most what the scrapes in flight grew
		// existing series' chunks by: a few KiB.
		got = budgetResult{Survived: true, Refused: st.RefusedSeriesForBytes+st.RefusedSeriesForNamespaceBytes > 0, WithinBudget: st.UsedBytes <= storeBudget+1<<20}
		t.Logf("store after %d scrapes of the churning targets: %d series, %d bytes used of %d, %d series refused for bytes, %d for the namespace's share",
			churn.Load(), st.SeriesCount, st.UsedBytes, storeBudget, st.RefusedSeriesForBytes, st.RefusedSeriesForNamespaceBytes)
	}
	s.expect(t, areaScrape, "the store's byte budget holds", budgetResult{true, true, true}, got, false)
}

// scrapeSeriesInputs: a million series, of a name no trigger requests
// (the store keeps none of them) and of a requested one. The scraper's body
// limit and the store's series cap (promql.Options.MaxSeries) must hold,
// and the process must stay within its memory.
func (s *suite) scrapeSeriesInputs(t *testing.T) {
	// As many distinct series as fit the body limit: over half a million
	// lines.
	page := func(name string) string {
		var b strings.Builder
		for i := 0; b.Len() < maxScrapeBody-64; i++ {
			fmt.Fprintf(&b, "%s{i=\"%d\"} 1\n", name, i)
		}
		return b.String()
	}
	unrequested := page("hostile_unrequested")
	s.runTargets(t, []target{
		// Skipped unread: no labels are built for them.
		{name: "a million series of a name no trigger requests", handler: exposition(unrequested), want: up(), slowOK: true},
		// Refused at metrics.sampleLimit (10,000), storing nothing.
		{name: "a million series (as many as fit 10 MiB)", handler: exposition(page(metricBomb)), want: down("sample limit")},
		{name: "a million series over 20 MiB", handler: func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, unrequested)
			_, _ = io.WriteString(w, unrequested)
		}, want: down("too large"), slowOK: true},
	}, nil)
	type capResult struct{ Survived, WithinCap bool }
	var got capResult
	if s.bin.alive() == nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		st, err := s.storeSummary(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = capResult{Survived: true, WithinCap: st.SeriesCount <= promql.DefaultMaxSeries}
		t.Logf("store after the bombs: %d series, %d refused, %d chunk bytes", st.SeriesCount, st.RefusedSeries, st.ChunkBytes)
	}
	s.expect(t, areaScrape, "the store's series cap holds", capResult{true, true}, got, false)
}

// repeat is an endless reader of s.
func repeat(s string) io.Reader { return &repeater{s: s} }

type repeater struct {
	s string
	i int
}

func (r *repeater) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.s[r.i:])
		n += c
		r.i = (r.i + c) % len(r.s)
	}
	return n, nil
}
