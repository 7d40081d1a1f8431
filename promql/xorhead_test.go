package promql

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// TestXORHeadMatchesChunkenc holds the store's own XOR encoder to
// chunkenc's: the same samples give the same bytes, sample after sample,
// so chunkenc reads the store's chunks as its own.
func TestXORHeadMatchesChunkenc(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	series := map[string]func(i int, prev float64) float64{
		"constant": func(int, float64) float64 { return 42 },
		"counter":  func(_ int, prev float64) float64 { return prev + float64(rng.IntN(100)) },
		"gauge":    func(int, float64) float64 { return rng.Float64() * 1e6 },
		"small":    func(int, float64) float64 { return float64(rng.IntN(4)) },
		"special": func(i int, _ float64) float64 {
			return []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), math.Float64frombits(value.StaleNaN), math.MaxFloat64, math.SmallestNonzeroFloat64}[i%8]
		},
	}
	// Timestamp steps covering every delta-of-delta bucket.
	steps := []int64{5000, 5000, 5001, 4000, 5000 + 1<<13, 5000 + 1<<16, 5000 + 1<<19, 5000 + 1<<30, 1, 5000, 0}
	for name, next := range series {
		t.Run(name, func(t *testing.T) {
			for _, first := range []int64{0, -1_700_000_000_000, 1_767_225_600_000} {
				want := chunkenc.NewXORChunk()
				app, err := want.Appender()
				if err != nil {
					t.Fatal(err)
				}
				var got xorHead
				got.start(first, 0)
				ts, v := first, 0.0
				for i := range samplesPerChunk {
					if i > 0 {
						ts += steps[rng.IntN(len(steps))]
					}
					v = next(i, v)
					app.Append(0, ts, v)
					got.append(ts, v)
					if !bytes.Equal(got.bytes(), want.Bytes()) {
						t.Fatalf("first %d, sample %d (t=%d v=%v): bytes\n%x\nwant\n%x", first, i, ts, v, got.bytes(), want.Bytes())
					}
				}
			}
		})
	}
}

// TestStoreChargesCloseToItsEncodedSamples ingests the benchmarks' 1,000
// series (30 minutes at 5 s) and holds what the store takes and charges
// against Options.MaxBytes to the encoded samples: the chunk buffers
// (chunk headers and the heads' spare capacity included) within 10% of
// them, and everything charged (labels and bookkeeping included) within
// 60%. BenchmarkBytesPerSample measures the heap itself.
func TestStoreChargesCloseToItsEncodedSamples(t *testing.T) {
	s := NewStore(Options{Retention: -1})
	ingest(t, s, benchDataset)
	u := s.Usage()
	var buffers int
	s.mtx.RLock()
	s.eachSeries(func(ser *memSeries) {
		ser.lock()
		buffers += ser.chunkBytes()
		ser.unlock()
	})
	s.mtx.RUnlock()
	payload := float64(u.Bytes)
	t.Logf("%d series, %d samples: %.3f encoded bytes, %.3f in chunk buffers, %.3f charged per sample",
		u.Series, u.Samples, payload/float64(u.Samples), float64(buffers)/float64(u.Samples), float64(u.UsedBytes)/float64(u.Samples))
	if u.Samples != benchSeries*benchSamples {
		t.Fatalf("%d samples stored, want %d", u.Samples, benchSeries*benchSamples)
	}
	if r := float64(buffers) / payload; r > 1.10 {
		t.Errorf("chunk buffers take %.3f times the encoded samples, want at most 1.10", r)
	}
	if r := float64(u.UsedBytes) / payload; r > 1.60 {
		t.Errorf("the store charges %.3f times the encoded samples, want at most 1.60", r)
	}
}
