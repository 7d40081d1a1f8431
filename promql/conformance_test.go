package promql

import (
	"testing"
	"time"

	prom "github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/storage"
)

func newConformanceEngine(t testing.TB) *prom.Engine {
	ng := prom.NewEngine(EngineOptions(100*time.Second, promqltest.DefaultMaxSamplesPerQuery, 0, nil))
	t.Cleanup(func() { _ = ng.Close() })
	return ng
}

func newConformanceStore(testing.TB) storage.Storage {
	return NewStore(Options{Retention: -1, MaxSeries: -1})
}

func TestPromQLBuiltinFiles(t *testing.T) {
	promqltest.RunBuiltinTestsWithStorage(t, newConformanceEngine(t), newConformanceStore)
}
