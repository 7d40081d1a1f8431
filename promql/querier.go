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

// candidates returns the series matching ms, sorted by labels.
func (q *querier) candidates(ms []*labels.Matcher) []*memSeries {
	q.store.mtx.RLock()
	var (
		list   []*memSeries
		sorted = true
		byName = false
	)
	for i, m := range ms {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			list = q.store.byName[m.Value]
			byName = true
			// Every series in the list has that name: test only the rest.
			ms = append(slices.Clip(ms[:i]), ms[i+1:]...)
			break
		}
	}
	if !byName {
		sorted = false
		for _, l := range q.store.byName {
			list = append(list, l...)
		}
	}
	out := make([]*memSeries, 0, len(list))
	for _, ser := range list {
		if matches(ser.lset, ms) {
			out = append(out, ser)
		}
	}
	q.store.mtx.RUnlock()
	if !sorted {
		sort.Slice(out, func(i, j int) bool { return labels.Compare(out[i].lset, out[j].lset) < 0 })
	}
	return out
}

func matches(lset labels.Labels, ms []*labels.Matcher) bool {
	for _, m := range ms {
		if !m.Matches(lset.Get(m.Name)) {
			return false
		}
	}
	return true
}

func (q *querier) Select(_ context.Context, _ bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	mint, maxt := q.mint, q.maxt
	labelsOnly := hints != nil && hints.Func == "series"
	cands := q.candidates(ms)
	// One allocation each for all snapshots and all their chunk lists.
	set := &seriesSet{series: make([]snapshotSeries, 0, len(cands))}
	all := make([]chunkMeta, 0, 2*len(cands))
	for _, ser := range cands {
		from := len(all)
		ser.mtx.Lock()
		if !labelsOnly {
			for _, c := range ser.closed {
				if c.maxT >= mint && c.minT <= maxt {
					all = append(all, c)
				}
			}
			// The head chunk keeps growing under appends, so the query gets
			// its own copy of the bytes written so far.
			if h := ser.head; h.chunk != nil && h.maxT >= mint && h.minT <= maxt {
				if c, err := chunkenc.FromData(h.chunk.Encoding(), slices.Clone(h.chunk.Bytes())); err == nil {
					all = append(all, chunkMeta{chunk: c, minT: h.minT, maxT: h.maxT})
				}
			}
		}
		ser.mtx.Unlock()
		if len(all) > from || labelsOnly {
			set.series = append(set.series, snapshotSeries{lset: ser.lset, chunks: all[from:len(all):len(all)], mint: mint, maxt: maxt})
		}
	}
	return set
}

func (q *querier) LabelValues(_ context.Context, name string, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	seen := map[string]struct{}{}
	for _, ser := range q.candidates(ms) {
		if v := ser.lset.Get(name); v != "" {
			seen[v] = struct{}{}
		}
	}
	return sortedKeys(seen, hints), nil, nil
}

func (q *querier) LabelNames(_ context.Context, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	seen := map[string]struct{}{}
	for _, ser := range q.candidates(ms) {
		ser.lset.Range(func(l labels.Label) { seen[l.Name] = struct{}{} })
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
	chunks     []chunkMeta
	mint, maxt int64
}

func (s *snapshotSeries) Labels() labels.Labels { return s.lset }

func (s *snapshotSeries) Iterator(reuse chunkenc.Iterator) chunkenc.Iterator {
	it, ok := reuse.(*seriesIterator)
	if !ok {
		it = &seriesIterator{}
	}
	*it = seriesIterator{chunks: s.chunks, mint: s.mint, maxt: s.maxt, reuse: it.reuse}
	it.seeker = seeker[int64]{it}
	return it
}

// seriesIterator walks a series' chunks in order, bounded to [mint, maxt].
type seriesIterator struct {
	seeker[int64]
	chunks     []chunkMeta
	i          int
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
	it.cur = c.chunk.Iterator(it.reuse)
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
