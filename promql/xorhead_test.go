package promql

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
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

// TestSelectAroundTheHeadChunksStart queries ranges starting before, at
// and after the first sample of the head chunk (closed chunks are left
// unread when the range starts in the head): every range gets exactly its
// samples, whichever chunks hold them.
func TestSelectAroundTheHeadChunksStart(t *testing.T) {
	s := NewStore(Options{Retention: -1})
	const n = 2*samplesPerChunk + 30 // two closed chunks and a head
	for i := range n {
		if err := s.Append(labels.FromStrings("__name__", "x"), int64(i)*1000, float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	headStart := int64(2*samplesPerChunk) * 1000
	for _, mint := range []int64{0, 5_000, headStart - 1000, headStart - 1, headStart, headStart + 1, headStart + 7000, int64(n-1) * 1000} {
		q, err := s.Querier(mint, math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		set := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "x"))
		var got []int64
		for set.Next() {
			it := set.At().Iterator(nil)
			for it.Next() != chunkenc.ValNone {
				got = append(got, it.AtT())
			}
		}
		var want []int64
		for i := range n {
			if ts := int64(i) * 1000; ts >= mint {
				want = append(want, ts)
			}
		}
		if len(got) != len(want) || (len(got) > 0 && (got[0] != want[0] || got[len(got)-1] != want[len(want)-1])) {
			t.Errorf("from %d: %d samples %v..., want %d from %d", mint, len(got), got[:min(3, len(got))], len(want), want[0])
		}
	}
}

// TestFullChunkClosedKeepsOrderingRules: a full XOR chunk is closed at its
// last sample, leaving the series without a head; the next samples are
// still held to the head's rules against that last sample (a repeat of it
// is dropped, another value at its timestamp or an older timestamp is
// refused), and the next newer sample starts a new chunk.
func TestFullChunkClosedKeepsOrderingRules(t *testing.T) {
	s := NewStore(Options{Retention: -1})
	ls := labels.FromStrings("__name__", "x")
	for i := range samplesPerChunk {
		if err := s.Append(ls, int64(i)*1000, float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	last := int64(samplesPerChunk-1) * 1000
	ser := s.lookup(ls, ls.Hash())
	ser.lock()
	hasHead := ser.hasHead()
	ser.unlock()
	if hasHead {
		t.Fatal("a full chunk left a head behind")
	}
	type result struct{ Same, Other, Older, Newer string }
	errText := func(err error) string {
		if err == nil {
			return "ok"
		}
		return err.Error()
	}
	got := result{
		Same:  errText(s.Append(ls, last, float64(samplesPerChunk-1))),
		Other: errText(s.Append(ls, last, 7)),
		Older: errText(s.Append(ls, last-1000, 7)),
		Newer: errText(s.Append(ls, last+1000, 7)),
	}
	want := result{Same: "ok", Other: storage.ErrDuplicateSampleForTimestamp.Error(), Older: storage.ErrOutOfOrderSample.Error(), Newer: "ok"}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if st := s.Stats(); st.TotalPoints != samplesPerChunk+1 {
		t.Errorf("%d samples stored, want %d", st.TotalPoints, samplesPerChunk+1)
	}
}
