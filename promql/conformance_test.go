package promql

import (
	"testing"
	"time"

	prom "github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/storage"
)

// newConformanceEngine is the Evaluator's engine configuration with the
// test runner's sample limit and timeout.
func newConformanceEngine(t testing.TB) *prom.Engine {
	ng := prom.NewEngine(EngineOptions(100*time.Second, promqltest.DefaultMaxSamplesPerQuery, 0, nil))
	t.Cleanup(func() { _ = ng.Close() })
	return ng
}

// newConformanceStore keeps everything: the test files put their samples
// around the Unix epoch, far outside any retention window.
func newConformanceStore(testing.TB) storage.Storage {
	return NewStore(Options{Retention: -1, MaxSeries: -1})
}

// countingT counts the test files RunBuiltinTestsWithStorage runs.
type countingT struct {
	*testing.T
	files, passed int
}

func (c *countingT) Run(name string, f func(*testing.T)) bool {
	c.files++
	ok := c.T.Run(name, f)
	if ok {
		c.passed++
	}
	return ok
}

// TestPromQLBuiltinFiles runs Prometheus' own PromQL acceptance suite (every
// built-in promqltest file, native histograms and start timestamps
// included) against the Store with the Evaluator's engine settings. Each
// eval statement is a subtest; no file or case is excluded.
func TestPromQLBuiltinFiles(t *testing.T) {
	ct := &countingT{T: t}
	promqltest.RunBuiltinTestsWithStorage(ct, newConformanceEngine(t), newConformanceStore)
	exprs, err := promqltest.GetBuiltInExprs()
	if err != nil {
		t.Fatal(err)
	}
	if ct.files == 0 {
		t.Fatal("no built-in test files ran")
	}
	t.Logf("promqltest: %d of %d built-in files passed; they hold %d eval statements", ct.passed, ct.files, len(exprs))
}
