package promql

import (
	"context"
	"math"
	"slices"
	"sort"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"
)

// Querier implements storage.Queryable. The range is clamped to the
// retention window so a query sees exactly what retention promises, even
// before Trim has dropped a partly expired chunk.
func (s *Store) Querier(mint, maxt int64) (storage.Querier, error) {
	if c := s.cutoff(); mint < c {
		mint = c
	}
	return &querier{store: s, mint: mint, maxt: maxt}, nil
}

// ChunkQuerier implements storage.ChunkQueryable by re-encoding the sample
// view; nothing in scaleplane's query path uses it.
func (s *Store) ChunkQuerier(mint, maxt int64) (storage.ChunkQuerier, error) {
	q, err := s.Querier(mint, maxt)
	if err != nil {
		return nil, err
	}
	return &chunkQuerier{q.(*querier)}, nil
}

type querier struct {
	store      *Store
	mint, maxt int64
}

// candidates returns the series matching ms, in the index's order.
func (q *querier) candidates(ms []*labels.Matcher) []*memSeries {
	return q.store.selectSeries(ms)
}

func (q *querier) Select(_ context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	mint, maxt := q.mint, q.maxt
	labelsOnly := hints != nil && hints.Func == "series"
	cands := q.candidates(ms)
	set := &seriesSet{}
	if len(cands) <= len(set.one) {
		set.series = set.one[:0]
	} else {
		set.series = make([]snapshotSeries, 0, len(cands))
	}
	// One allocation each for all chunk lists and all head copies, sized
	// for two chunks (a trigger's window of a few minutes spans one or
	// two) and a small head; they grow if needed. The head copies' is made at the first head (a series whose
	// last chunk was just closed full has none).
	var (
		all   []closedChunk
		arena []byte
	)
	if !labelsOnly {
		all = make([]closedChunk, 0, 2*len(cands))
	}
	// The symbols the labels are rebuilt from are read under the index's
	// lock; a series removed since the index gave it is left out.
	q.store.mtx.RLock()
	for i, ser := range cands {
		from := len(all)
		ser.lock()
		if ser.deleted() {
			ser.unlock()
			continue
		}
		if !labelsOnly {
			// Closed chunks are shared; the head chunk keeps growing under
			// appends, so the query gets its own copy of it.
			all, arena = ser.appendChunks(all, arena, 256*(len(cands)-i), true, mint, maxt)
		}
		if len(all) > from || labelsOnly {
			lset := q.store.syms.labels(ser.labelRefs())
			set.series = append(set.series, snapshotSeries{lset: lset, chunks: all[from:len(all):len(all)], mint: mint, maxt: maxt})
		}
		ser.unlock()
	}
	q.store.mtx.RUnlock()
	if sortSeries && len(set.series) > 1 {
		slices.SortFunc(set.series, func(a, b snapshotSeries) int { return labels.Compare(a.lset, b.lset) })
	}
	return set
}

func (q *querier) LabelValues(_ context.Context, name string, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	seen := map[string]struct{}{}
	if len(ms) == 0 {
		q.store.mtx.RLock()
		for v := range q.store.postings[name] {
			seen[v] = struct{}{}
		}
		q.store.mtx.RUnlock()
		return sortedKeys(seen, hints), nil, nil
	}
	cands := q.candidates(ms)
	q.store.mtx.RLock()
	defer q.store.mtx.RUnlock()
	for _, ser := range cands {
		ser.lock()
		if !ser.deleted() {
			if v := q.store.syms.value(ser.labelRefs(), name); v != "" {
				seen[v] = struct{}{}
			}
		}
		ser.unlock()
	}
	return sortedKeys(seen, hints), nil, nil
}

func (q *querier) LabelNames(_ context.Context, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	seen := map[string]struct{}{}
	if len(ms) == 0 {
		q.store.mtx.RLock()
		for n := range q.store.postings {
			seen[n] = struct{}{}
		}
		q.store.mtx.RUnlock()
		return sortedKeys(seen, hints), nil, nil
	}
	cands := q.candidates(ms)
	q.store.mtx.RLock()
	defer q.store.mtx.RUnlock()
	for _, ser := range cands {
		ser.lock()
		if !ser.deleted() {
			q.store.syms.names(ser.labelRefs(), func(n string) { seen[n] = struct{}{} })
		}
		ser.unlock()
	}
	return sortedKeys(seen, hints), nil, nil
}

func sortedKeys(m map[string]struct{}, hints *storage.LabelHints) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	if hints != nil && hints.Limit > 0 && len(out) > hints.Limit {
		out = out[:hints.Limit]
	}
	return out
}

func (*querier) Close() error { return nil }

type chunkQuerier struct{ *querier }

func (q *chunkQuerier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.ChunkSeriesSet {
	return storage.NewSeriesSetToChunkSet(q.querier.Select(ctx, sortSeries, hints, ms...))
}

type seriesSet struct {
	series []snapshotSeries
	i      int
	// one holds the series of the common single-series Select without a
	// second allocation.
	one [1]snapshotSeries
}

func (s *seriesSet) Next() bool {
	if s.i >= len(s.series) {
		return false
	}
	s.i++
	return true
}

func (s *seriesSet) At() storage.Series              { return &s.series[s.i-1] }
func (*seriesSet) Err() error                        { return nil }
func (*seriesSet) Warnings() annotations.Annotations { return nil }

// snapshotSeries is a series as of Select: later appends do not show up.
type snapshotSeries struct {
	lset       labels.Labels
	chunks     []closedChunk
	mint, maxt int64
}

func (s *snapshotSeries) Labels() labels.Labels { return s.lset }

func (s *snapshotSeries) Iterator(reuse chunkenc.Iterator) chunkenc.Iterator {
	it, ok := reuse.(*seriesIterator)
	if !ok {
		it = &seriesIterator{}
	}
	*it = seriesIterator{chunks: s.chunks, mint: s.mint, maxt: s.maxt, chunk: it.chunk, reuse: it.reuse}
	it.seeker = seeker[int64]{it}
	return it
}

// seriesIterator walks a series' chunks in order, bounded to [mint, maxt].
type seriesIterator struct {
	seeker[int64]
	chunks []closedChunk
	i      int
	// chunk wraps the bytes of the open chunk; it and reuse are kept when
	// the engine reuses the iterator for the next series.
	chunk      chunkenc.Chunk
	cur        chunkenc.Iterator
	reuse      chunkenc.Iterator
	typ        chunkenc.ValueType
	mint, maxt int64
	// checkMin and checkMax are set when the open chunk sticks out of
	// [mint, maxt]; most chunks do not, and then Next skips the checks.
	checkMin, checkMax bool
	done               bool
	err                error
}

func (it *seriesIterator) open(t int64) bool {
	for it.i < len(it.chunks) && it.chunks[it.i].maxT < t {
		it.i++
	}
	if it.i >= len(it.chunks) {
		return false
	}
	c := it.chunks[it.i]
	if enc := c.encoding(); it.chunk != nil && it.chunk.Encoding() == enc {
		it.chunk.Reset(c.bytes())
	} else {
		chk, err := chunkenc.FromData(enc, c.bytes())
		if err != nil {
			it.err = err
			it.finish()
			return false
		}
		it.chunk = chk
	}
	it.cur = it.chunk.Iterator(it.reuse)
	it.reuse = it.cur
	it.checkMin, it.checkMax = c.minT < it.mint, c.maxT > it.maxt
	it.i++
	return true
}

func (it *seriesIterator) finish() chunkenc.ValueType {
	it.done, it.typ = true, chunkenc.ValNone
	return chunkenc.ValNone
}

// settle accepts the sample the chunk iterator stopped at, or moves on.
func (it *seriesIterator) settle(vt chunkenc.ValueType) (chunkenc.ValueType, bool) {
	if vt == chunkenc.ValNone {
		if err := it.cur.Err(); err != nil {
			it.err = err
			return it.finish(), true
		}
		it.cur = nil
		return chunkenc.ValNone, false
	}
	if it.checkMax && it.cur.AtT() > it.maxt {
		return it.finish(), true
	}
	it.typ = vt
	return vt, true
}

func (it *seriesIterator) Next() chunkenc.ValueType {
	for !it.done {
		if it.cur == nil && !it.open(it.mint) {
			return it.finish()
		}
		var vt chunkenc.ValueType
		if it.checkMin {
			// Skip the part of the chunk before mint inside the chunk
			// iterator, without a round trip through this one per sample.
			vt, it.checkMin = it.cur.Seek(it.mint), false
		} else {
			vt = it.cur.Next()
		}
		if vt, ok := it.settle(vt); ok {
			return vt
		}
	}
	return chunkenc.ValNone
}

func (it *seriesIterator) seek(t int64) chunkenc.ValueType {
	if it.done {
		return chunkenc.ValNone
	}
	if it.cur != nil && it.typ != chunkenc.ValNone && it.cur.AtT() >= t {
		return it.typ
	}
	t = max(t, it.mint)
	for !it.done {
		if it.cur == nil && !it.open(t) {
			return it.finish()
		}
		// t >= mint, so later Next calls need no skipping.
		it.checkMin = false
		if vt, ok := it.settle(it.cur.Seek(t)); ok {
			return vt
		}
	}
	return chunkenc.ValNone
}

// seeker gives seriesIterator the Seek(int64) method of chunkenc.Iterator.
// It is generic only so that go vet's stdmethods check, which takes any
// Seek(int64, ...) for io.Seeker, does not reject the package; Prometheus
// itself turns that check off instead.
type seeker[T ~int64] struct{ it *seriesIterator }

func (s seeker[T]) Seek(t T) chunkenc.ValueType { return s.it.seek(int64(t)) }

func (it *seriesIterator) At() (int64, float64) { return it.cur.At() }

func (it *seriesIterator) AtHistogram(h *histogram.Histogram) (int64, *histogram.Histogram) {
	return it.cur.AtHistogram(h)
}

func (it *seriesIterator) AtFloatHistogram(fh *histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	return it.cur.AtFloatHistogram(fh)
}

func (it *seriesIterator) AtT() int64 {
	if it.cur == nil {
		return math.MinInt64
	}
	return it.cur.AtT()
}

func (it *seriesIterator) AtST() int64 { return it.cur.AtST() }
func (it *seriesIterator) Err() error  { return it.err }
