package promql

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

const (
	// DefaultRetention is how much history the store keeps: enough for the
	// rate and *_over_time windows autoscaling triggers use ([1m] .. [15m]).
	DefaultRetention = 30 * time.Minute
	// DefaultMaxSeries bounds memory when a pod exposes an unexpected
	// high-cardinality metric under a requested name.
	DefaultMaxSeries = 100_000
	// DefaultMaxBytes bounds what the series' labels, bookkeeping and
	// chunks may take together: 100,000 series of typical scrape data
	// (about 150 bytes of labels and bookkeeping and 760 of chunks each
	// over 30 minutes at 5 s) fit in it, so for such data MaxSeries binds
	// first; series with long labels or values that do not compress hit it
	// instead. docs/profiles.md has the arithmetic for a 512 MiB pod.
	DefaultMaxBytes = 128 << 20

	// seriesOverhead is what a series costs besides its labels (charged
	// as its symbol ids and the symbols it was first to use) and chunk
	// buffers, as charged against MaxBytes: the series record (48
	// bytes), its cells in the series table, the slab and the inverted
	// index, and its string's allocation slack. BenchmarkSeriesOverhead
	// measures about 120 bytes. The head chunk's spare capacity is charged
	// with the chunks (memSeries.chunkBytes).
	seriesOverhead = 136

	// samplesPerChunk matches Prometheus' head (120 samples = 10 minutes at
	// 5 s): fewer samples lose compression, more make retention coarser.
	samplesPerChunk = 120
	// maxHistogramChunkBytes cuts histogram chunks by size as the head does,
	// because one native histogram sample can be hundreds of bytes.
	maxHistogramChunkBytes = 1024
)

// errSeriesDeleted makes an appender re-resolve a series Trim removed while
// a transaction held it.
var errSeriesDeleted = errors.New("series was removed by retention")

// ErrSeriesLimit is returned when appending a new series would exceed
// Options.MaxSeries. Existing series keep accepting samples.
var ErrSeriesLimit = errors.New("series limit reached")

// ErrBytesLimit is returned when a new series would take the store past
// Options.MaxBytes, or a sample arrives while the store is past it.
var ErrBytesLimit = errors.New("store byte limit reached")

// limitError is a refusal at MaxSeries or MaxBytes. Its message is built
// only when read: a scrape may be refused thousands of series, and
// formatting each one's labels (which may be long) would cost more than
// the refusal saves.
type limitError struct {
	lset  labels.Labels
	err   error
	limit int64
	// what the limit is called in the configuration.
	setting string
}

func (e *limitError) Error() string {
	return fmt.Sprintf("append series %.200s: %v (%d); raise %s or request fewer metric names", e.lset.String(), e.err, e.limit, e.setting)
}

func (e *limitError) Unwrap() error { return e.err }

// Options configures a Store. The zero value gives the documented defaults.
type Options struct {
	// Retention is how long samples stay queryable, measured back from Now.
	// Zero means DefaultRetention; a negative value keeps everything (used
	// by Prometheus' test suite, whose data sits at the Unix epoch).
	Retention time.Duration
	// MaxSeries caps the number of series; appends creating more are refused
	// with ErrSeriesLimit and counted in Stats.RefusedSeries. Zero means
	// DefaultMaxSeries; a negative value removes the cap.
	MaxSeries int
	// MaxSeriesPerNamespace caps the series of one namespace (the
	// namespace label every scraped sample carries): the store is shared
	// by every tenant's triggers, and one tenant's pods must not take all
	// of MaxSeries. Appends past it are refused with ErrSeriesLimit and
	// counted in Stats.RefusedSeriesForNamespace. Zero means a quarter of
	// MaxSeries (at least 1), as in the binary's configuration; a negative
	// value removes the cap.
	MaxSeriesPerNamespace int
	// MaxBytesPerNamespace caps what one namespace's series take of
	// MaxBytes (their labels, bookkeeping and chunks), so that one
	// tenant's long labels or incompressible values cannot take the whole
	// store: a new series past it is refused with ErrBytesLimit and counted
	// in Stats.RefusedSeriesForNamespaceBytes, and while the namespace is
	// past it its samples other than staleness markers are refused. Zero
	// means a quarter of MaxBytes; a negative value removes the cap.
	MaxBytesPerNamespace int64
	// MaxBytes caps what the store holds: every series' labels and
	// bookkeeping (a fixed estimate per series) and its chunks. A new
	// series that would take the store past it is refused with
	// ErrBytesLimit and counted in Stats.RefusedSeriesForBytes; while the
	// store is past it (existing series grow their chunks), samples other
	// than staleness markers are refused too and counted in
	// Stats.RefusedSamples, until retention frees room. Zero means
	// DefaultMaxBytes; a negative value removes the cap.
	MaxBytes int64
	// Now is the clock retention is measured against. Nil means time.Now.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.MaxSeries == 0 {
		o.MaxSeries = DefaultMaxSeries
	}
	if o.MaxSeriesPerNamespace == 0 && o.MaxSeries > 0 {
		o.MaxSeriesPerNamespace = max(1, o.MaxSeries/4)
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxBytesPerNamespace == 0 && o.MaxBytes > 0 {
		o.MaxBytesPerNamespace = max(1, o.MaxBytes/4)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Store is an in-memory time-series store holding Gorilla-compressed chunks
// (Prometheus' chunkenc) for a bounded retention window. It implements
// storage.Storage, so the Prometheus engine and Prometheus' promqltest can
// use it directly. It is safe for concurrent use.
type Store struct {
	opts Options

	// mtx guards the index (byLabels, postings); series have their own
	// locks (seriesLocks) so appends to different series never contend
	// on it for long.
	mtx sync.RWMutex
	// byLabels finds a series by its labels.
	byLabels seriesTable
	// syms holds the series' label names and values; series keep their
	// ids.
	syms symbols
	// postings is the inverted index Select intersects: label name, then
	// value, then the slots of the series carrying that pair.
	postings map[string]map[string]*postingList
	// grown are the posting lists whose array grew since the last Trim,
	// which gives back their spare capacity (fitPostings).
	grown []*postingList
	all   int
	// perNamespace accounts the series and bytes of each namespace label
	// value.
	perNamespace map[string]*nsAccount
	// accts are the accounts with series by id (nsAccount.id), which the
	// symbol table names the accounts charged for its strings by;
	// freeAccts are the ids of accounts whose series all left.
	accts     []*nsAccount
	freeAccts []uint32

	// slab maps series references to series: a reference is a slot index
	// plus the slot's generation, so a reference kept by a scrape loop
	// after its series expired never reaches the series reusing the slot.
	// Readers (every append by reference) take no lock: pages never move
	// and entries are atomic; slabMtx only serialises writers.
	slabMtx sync.Mutex
	pages   atomic.Pointer[[]*slabPage]
	slots   uint32
	// free are the slots of removed series, each with the generation its
	// next series gets (in the high 32 bits): a live slot's generation is
	// in its series, so no slot needs another 4 bytes for it.
	free []uint64

	// used is what the series and their chunks take, as charged against
	// MaxBytes (seriesCost plus chunk bytes).
	used atomic.Int64
	// refused counts series refused at MaxSeries, refusedBytes those
	// refused at MaxBytes, refusedSamples the samples of existing series
	// refused while the store was past MaxBytes.
	refused          atomic.Uint64
	refusedBytes     atomic.Uint64
	refusedNamespace atomic.Uint64
	// refusedNamespaceBytes counts series refused at MaxBytesPerNamespace.
	refusedNamespaceBytes atomic.Uint64
	refusedSamples        atomic.Uint64
	minValidTime          atomic.Int64
	requested             Registry
}

// NewStore returns an empty store.
func NewStore(opts Options) *Store {
	s := &Store{
		opts:         opts.withDefaults(),
		postings:     map[string]map[string]*postingList{},
		perNamespace: map[string]*nsAccount{},
	}
	s.minValidTime.Store(math.MinInt64)
	s.requested.now = s.opts.Now
	return s
}

// Registry returns the set of metric names triggers and debug queries asked
// for; the scraper keeps only samples whose name is in it.
func (s *Store) Registry() *Registry { return &s.requested }

// Request adds metric names to the store's registry.
func (s *Store) Request(names ...string) { s.requested.Add(names...) }

// RequestQuery parses query and requests every metric name it selects.
func (s *Store) RequestQuery(query string) error {
	_, err := s.requested.AddQuery(query)
	return err
}

// Append adds one float sample outside any transaction; it is what the
// scraper and simple callers use.
func (s *Store) Append(lset labels.Labels, t int64, v float64) error {
	for {
		ser, _, err := s.getOrCreate(lset)
		if err != nil {
			return err
		}
		if err := s.admitSample(ser, v, 0); err != nil {
			return err
		}
		grown, err := ser.appendFloat(0, t, v, s.minValidTime.Load())
		s.used.Add(int64(grown))
		ser.acct.used.Add(int64(grown))
		if !errors.Is(err, errSeriesDeleted) {
			return err
		}
	}
}

// admitSample refuses a sample of an existing series while the store is
// past MaxBytes (pending is what the caller's transaction has grown it by
// so far). Staleness markers always pass: they end series, as Prometheus'
// sample_limit lets them through.
func (s *Store) admitSample(ser *memSeries, v float64, pending int64) error {
	if value.IsStaleNaN(v) {
		return nil
	}
	if s.opts.MaxBytes > 0 && s.used.Load()+pending > s.opts.MaxBytes {
		s.refusedSamples.Add(1)
		return &limitError{lset: s.labelsOf(ser), err: ErrBytesLimit, limit: s.opts.MaxBytes, setting: "metrics.maxStoreBytes"}
	}
	if s.opts.MaxBytesPerNamespace > 0 && ser.acct.used.Load() > s.opts.MaxBytesPerNamespace {
		s.refusedSamples.Add(1)
		lset := s.labelsOf(ser)
		return &limitError{lset: lset, err: ErrBytesLimit, limit: s.opts.MaxBytesPerNamespace, setting: "metrics.maxStoreBytesPerNamespace (namespace " + strconv.Quote(lset.Get(LabelNamespace)) + ")"}
	}
	return nil
}

// nsAccount is what one namespace's series take of the store.
type nsAccount struct {
	// series and id, the account's index in Store.accts while it has
	// series, are guarded by Store.mtx.
	series int
	id     uint32
	// used is the namespace's part of Store.used.
	used atomic.Int64
}

// addAccount gives acct, a namespace's account getting its first series,
// an id in s.accts; the caller holds s.mtx.
func (s *Store) addAccount(acct *nsAccount) {
	if n := len(s.freeAccts); n > 0 {
		acct.id = s.freeAccts[n-1]
		s.freeAccts = s.freeAccts[:n-1]
		s.accts[acct.id] = acct
		return
	}
	acct.id = uint32(len(s.accts))
	s.accts = append(s.accts, acct)
}

// dropAccount frees acct's id once its series are gone, and their symbols
// given back (the account is then charged for none); the caller holds
// s.mtx. Calling it again for the same account does nothing.
func (s *Store) dropAccount(acct *nsAccount) {
	if acct.series > 0 || s.accts[acct.id] != acct {
		return
	}
	s.accts[acct.id] = nil
	s.freeAccts = append(s.freeAccts, acct.id)
}

// labelsOf returns the labels of ser, in memory of their own; they are
// empty once ser has been removed (its symbols may be gone).
func (s *Store) labelsOf(ser *memSeries) labels.Labels {
	s.mtx.RLock()
	defer s.mtx.RUnlock()
	if ser.deleted() {
		return labels.EmptyLabels()
	}
	ser.lock()
	defer ser.unlock()
	return s.syms.labels(ser.labelRefs())
}

// seriesCost is what a series is charged against MaxBytes besides its
// chunks and the symbols it was first to use: the fixed overhead and its
// label symbol ids (labelsEnd bytes).
func seriesCost(labelsEnd int) int64 { return seriesOverhead + int64(labelsEnd) }

// cutoff is the oldest timestamp (ms) retention still keeps.
func (s *Store) cutoff() int64 {
	if s.opts.Retention < 0 {
		return math.MinInt64
	}
	return s.opts.Now().Add(-s.opts.Retention).UnixMilli()
}

// Trim drops chunks entirely older than the retention window and series
// left without samples, which frees room under MaxSeries. The scraper calls
// it once per cycle; appends also drop old chunks whenever they cut one.
func (s *Store) Trim() {
	cut := s.cutoff()
	s.minValidTime.Store(cut)
	s.fitPostings()
	if cut == math.MinInt64 {
		return
	}
	// One-off names nobody asked for over the retention leave too.
	s.requested.Expire(time.UnixMilli(cut))
	s.mtx.RLock()
	var empty []*memSeries
	freed := 0
	s.eachSeries(func(ser *memSeries) {
		ser.lock()
		n := ser.trim(cut)
		ser.acct.used.Add(-int64(n))
		freed += n
		if ser.empty() {
			empty = append(empty, ser)
		}
		ser.unlock()
	})
	s.mtx.RUnlock()
	s.used.Add(-int64(freed))
	if len(empty) == 0 {
		return
	}
	s.mtx.Lock()
	gone := empty[:0]
	for _, ser := range empty {
		ser.lock()
		// An append may have revived the series between the two locks.
		if ser.empty() {
			s.removeLocked(ser)
			gone = append(gone, ser)
		}
		ser.unlock()
	}
	s.removePostings(gone)
	s.mtx.Unlock()
}

// removeLocked takes ser out of byLabels and the slab; the caller holds
// s.mtx and ser's lock, and removes ser from the postings afterwards
// (removePostings, which also gives back its symbols), which it does for
// many series at once.
func (s *Store) removeLocked(ser *memSeries) {
	gen := ser.gen.Load()
	ser.gen.Store(0)
	refs := ser.labelRefs()
	s.byLabels.remove(s.syms.labels(refs).Hash(), ser.idx)
	ns := s.syms.value(refs, LabelNamespace)
	cost := seriesCost(ser.labelsEnd()) + int64(ser.chunkBytes())
	s.used.Add(-cost)
	ser.acct.used.Add(-cost)
	idx := ser.idx
	s.slabMtx.Lock()
	s.slot(idx).Store(nil)
	// Generation 0 marks a removed series, so a wrapping counter skips it.
	if gen++; gen == 0 {
		gen = 1
	}
	s.free = append(s.free, uint64(gen)<<32|uint64(idx))
	s.slabMtx.Unlock()
	s.all--
	if ser.acct.series--; ser.acct.series <= 0 {
		delete(s.perNamespace, ns)
	}
}

// Delete removes the series with these label sets, if the store has them,
// and returns how many it removed: a target that went away (a deleted pod)
// gives its series' bytes and places back to its namespace's share at
// once, rather than when retention drops them.
func (s *Store) Delete(lsets []labels.Labels) int {
	if len(lsets) == 0 {
		return 0
	}
	return s.removeSeries(len(lsets), func(i int) *memSeries {
		ls := lsets[i]
		return s.lookup(ls, ls.Hash())
	})
}

// deleteRefs removes the series with these references that are still
// there, as Delete does by labels.
func (s *Store) deleteRefs(refs []storage.SeriesRef) int {
	if len(refs) == 0 {
		return 0
	}
	return s.removeSeries(len(refs), func(i int) *memSeries {
		if ser := s.byRef(refs[i]); ser != nil && !ser.deleted() {
			return ser
		}
		return nil
	})
}

// removeSeries removes, under the store's lock, the series find gives
// for 0..n-1 (nil: none there), and their postings in one pass.
func (s *Store) removeSeries(n int, find func(i int) *memSeries) int {
	s.mtx.Lock()
	defer s.mtx.Unlock()
	var gone []*memSeries
	for i := range n {
		ser := find(i)
		if ser == nil {
			continue
		}
		ser.lock()
		s.removeLocked(ser)
		ser.unlock()
		gone = append(gone, ser)
	}
	s.removePostings(gone)
	return len(gone)
}

// appendStale appends a staleness marker at t to the series with
// reference ref, if it is still there. Ordering errors only mean a newer
// sample already exists, and are dropped.
func (s *Store) appendStale(ref storage.SeriesRef, t int64) {
	ser := s.byRef(ref)
	if ser == nil {
		return
	}
	grown, _ := ser.appendFloat(0, t, math.Float64frombits(value.StaleNaN), s.minValidTime.Load())
	s.used.Add(int64(grown))
	ser.acct.used.Add(int64(grown))
}

// NamespaceUsedBytes is what namespace ns's series take of
// Options.MaxBytesPerNamespace.
func (s *Store) NamespaceUsedBytes(ns string) int64 {
	s.mtx.RLock()
	defer s.mtx.RUnlock()
	if a := s.perNamespace[ns]; a != nil {
		return a.used.Load()
	}
	return 0
}

// slabPageSize is what fills 8 KiB: the allocator puts an 8-byte header
// in front of a large object holding pointers, and a page of 1,024
// pointers would take the next size class, 9,472 bytes.
const slabPageSize = 1023

type slabPage [slabPageSize]atomic.Pointer[memSeries]

func (s *Store) slot(idx uint32) *atomic.Pointer[memSeries] {
	pages := s.pages.Load()
	if pages == nil || int(idx/slabPageSize) >= len(*pages) {
		return nil
	}
	return &(*pages)[idx/slabPageSize][idx%slabPageSize]
}

func (s *Store) byRef(ref storage.SeriesRef) *memSeries {
	sl := s.slot(uint32(ref))
	if sl == nil {
		return nil
	}
	if ser := sl.Load(); ser != nil && ser.ref() == ref {
		return ser
	}
	return nil
}

// allocRef gives ser a reference; the caller holds s.mtx.
func (s *Store) allocRef(ser *memSeries) {
	s.slabMtx.Lock()
	defer s.slabMtx.Unlock()
	var idx uint32
	gen := uint32(1) // generation >= 1 keeps every ref non-zero
	if n := len(s.free); n > 0 {
		idx, gen = uint32(s.free[n-1]), uint32(s.free[n-1]>>32)
		s.free = s.free[:n-1]
	} else {
		idx = s.slots
		s.slots++
		if idx%slabPageSize == 0 {
			var pages []*slabPage
			if old := s.pages.Load(); old != nil {
				pages = append(pages, *old...)
			}
			pages = append(pages, new(slabPage))
			s.pages.Store(&pages)
		}
	}
	ser.idx = idx
	ser.gen.Store(gen)
	s.slot(idx).Store(ser)
}

// eachSeries calls f with every series; the caller holds s.mtx.
func (s *Store) eachSeries(f func(*memSeries)) {
	for idx := range s.slots {
		if ser := s.slot(idx).Load(); ser != nil {
			f(ser)
		}
	}
}

func (s *Store) lookup(lset labels.Labels, h uint64) *memSeries {
	return s.byLabels.find(s, lset, h)
}

func (s *Store) getOrCreate(lset labels.Labels) (*memSeries, bool, error) {
	h := lset.Hash()
	s.mtx.RLock()
	ser := s.lookup(lset, h)
	s.mtx.RUnlock()
	if ser != nil {
		return ser, false, nil
	}
	if lset.IsEmpty() {
		return nil, false, errors.New("append series: empty label set")
	}
	if name, dup := lset.HasDuplicateLabelNames(); dup {
		return nil, false, fmt.Errorf("append series %s: duplicate label %q", lset, name)
	}

	s.mtx.Lock()
	defer s.mtx.Unlock()
	if ser := s.lookup(lset, h); ser != nil {
		return ser, false, nil
	}
	if s.opts.MaxSeries > 0 && s.all >= s.opts.MaxSeries {
		s.refused.Add(1)
		return nil, false, &limitError{lset: lset, err: ErrSeriesLimit, limit: int64(s.opts.MaxSeries), setting: "metrics.maxSeries"}
	}
	ns := lset.Get(LabelNamespace)
	acct := s.perNamespace[ns]
	if acct == nil {
		acct = &nsAccount{}
	}
	if s.opts.MaxSeriesPerNamespace > 0 && acct.series >= s.opts.MaxSeriesPerNamespace {
		s.refusedNamespace.Add(1)
		return nil, false, &limitError{lset: lset, err: ErrSeriesLimit, limit: int64(s.opts.MaxSeriesPerNamespace), setting: "metrics.maxSeriesPerNamespace (namespace " + strconv.Quote(ns) + ")"}
	}
	if acct.series == 0 {
		s.addAccount(acct)
	}
	// The symbols are taken first, to know what the table grows by (the
	// strings no series used yet), and given back if the series is
	// refused.
	cold, grown := s.syms.internLabels(lset, acct.id)
	refs := coldLabelRefs(cold)
	cost := seriesCost(len(cold)) + int64(grown)
	if s.opts.MaxBytes > 0 && s.used.Load()+cost > s.opts.MaxBytes {
		// Nothing is refunded: the strings acct was charged for go, and
		// it was charged for those it had before by other series, which
		// still use them.
		s.syms.releaseLabels(refs, acct.id, nil)
		s.dropAccount(acct)
		s.refusedBytes.Add(1)
		return nil, false, &limitError{lset: lset, err: ErrBytesLimit, limit: s.opts.MaxBytes, setting: "metrics.maxStoreBytes"}
	}
	if s.opts.MaxBytesPerNamespace > 0 && acct.used.Load()+cost > s.opts.MaxBytesPerNamespace {
		s.syms.releaseLabels(refs, acct.id, nil)
		s.dropAccount(acct)
		s.refusedNamespaceBytes.Add(1)
		return nil, false, &limitError{lset: lset, err: ErrBytesLimit, limit: s.opts.MaxBytesPerNamespace, setting: "metrics.maxStoreBytesPerNamespace (namespace " + strconv.Quote(ns) + ")"}
	}
	s.used.Add(cost)
	acct.used.Add(cost)
	if acct.series == 0 {
		// The map's key is the interned string, which pins no caller's
		// labels.
		s.perNamespace[s.syms.value(refs, LabelNamespace)] = acct
	}
	ser = &memSeries{cold: cold, acct: acct}
	s.allocRef(ser)
	s.byLabels.insert(h, ser.idx)
	s.addPostings(ser, refs)
	s.all++
	acct.series++
	return ser, true, nil
}

// Stats summarises the store for the debug endpoint and for benchmarks.
type Stats struct {
	SeriesCount int
	// TotalPoints counts stored samples, staleness markers included.
	TotalPoints int
	// TimestampBuckets counts distinct sample timestamps.
	TimestampBuckets int
	// ChunkBytes is the size of the encoded chunks.
	ChunkBytes int
	// RefusedSeries counts new series refused, at MaxSeries,
	// MaxSeriesPerNamespace, MaxBytes or MaxBytesPerNamespace;
	// RefusedSeriesForBytes those refused at MaxBytes,
	// RefusedSeriesForNamespace those refused at MaxSeriesPerNamespace,
	// RefusedSeriesForNamespaceBytes those refused at
	// MaxBytesPerNamespace.
	RefusedSeries, RefusedSeriesForBytes, RefusedSeriesForNamespace, RefusedSeriesForNamespaceBytes uint64
	// RefusedSamples counts samples of existing series refused while the
	// store was past MaxBytes.
	RefusedSamples uint64
	// UsedBytes is what the store charges against MaxBytes: labels, a
	// fixed estimate of bookkeeping per series, and chunks.
	UsedBytes int64
	// MinTime and MaxTime bound the stored samples (ms); zero when empty.
	MinTime, MaxTime int64
}

// Stats walks the store. It decodes every timestamp, so it is meant for
// debugging, not for a hot path.
func (s *Store) Stats() Stats {
	st := Stats{
		RefusedSeries:                  s.refused.Load() + s.refusedBytes.Load() + s.refusedNamespace.Load() + s.refusedNamespaceBytes.Load(),
		RefusedSeriesForBytes:          s.refusedBytes.Load(),
		RefusedSeriesForNamespace:      s.refusedNamespace.Load(),
		RefusedSeriesForNamespaceBytes: s.refusedNamespaceBytes.Load(),
		RefusedSamples:                 s.refusedSamples.Load(),
		UsedBytes:                      s.used.Load(),
	}
	ts := map[int64]struct{}{}
	first := true
	var it chunkenc.Iterator
	s.mtx.RLock()
	defer s.mtx.RUnlock()
	s.eachSeries(func(ser *memSeries) {
		st.SeriesCount++
		ser.lock()
		chunks, _ := ser.appendChunks(nil, nil, 0, false, 0, 0)
		for _, c := range chunks {
			chk, err := chunkenc.FromData(c.encoding(), c.bytes())
			if err != nil {
				continue
			}
			st.ChunkBytes += len(c.data) - 1
			st.TotalPoints += chk.NumSamples()
			if first || c.minT < st.MinTime {
				st.MinTime = c.minT
			}
			if first || c.maxT > st.MaxTime {
				st.MaxTime = c.maxT
			}
			first = false
			it = chk.Iterator(it)
			for it.Next() != chunkenc.ValNone {
				ts[it.AtT()] = struct{}{}
			}
		}
		ser.unlock()
	})
	st.TimestampBuckets = len(ts)
	return st
}

// StartTime implements storage.Storage.
func (s *Store) StartTime() (int64, error) {
	st := s.Stats()
	return st.MinTime, nil
}

// Close implements storage.Storage; the store holds no external resources.
func (*Store) Close() error { return nil }

type lastHistogram struct {
	h  *histogram.Histogram
	fh *histogram.FloatHistogram
}

// otherHead is a head chunk of another encoding than classic XOR: XOR2
// (float samples with a start timestamp) or a native histogram chunk. Such
// heads are rare, so the series holds them by pointer.
type otherHead struct {
	chunk      chunkenc.Chunk
	app        chunkenc.Appender
	minT, maxT int64
	lastV      float64
	// lastHist is the previous histogram sample, for the duplicate check;
	// nil after a float sample.
	lastHist *lastHistogram
}

// closedChunk is a chunk that takes no more samples, as a query sees it:
// its encoding byte and its bytes in one string, without a chunkenc.Chunk
// object (a query wraps the bytes in a reused one). Queries share it.
type closedChunk struct {
	data       string
	minT, maxT int64
}

func (c closedChunk) encoding() chunkenc.Encoding { return chunkenc.Encoding(c.data[0]) }

// bytes returns the chunk's bytes, which nobody may modify.
func (c closedChunk) bytes() []byte {
	return unsafe.Slice(unsafe.StringData(c.data[1:]), len(c.data)-1)
}

// A series' closed chunks are stored back to back, oldest first, in one
// exactly sized string: per chunk a header of three varints (the length
// of what follows the header, minT less the previous chunk's maxT (less
// zero for the first chunk), and maxT-minT: about 7 bytes where
// fixed-width fields take 20), then the encoding byte and the chunk's
// bytes. One allocation per series instead of a slice of chunk objects:
// the list changes once per chunk (every 10 minutes at 5 s) and lives for
// the whole retention.
const maxClosedHeader = 3 * binary.MaxVarintLen64

// appendClosedHeader appends the header of a closed chunk of n bytes
// (encoding byte included) spanning [minT, maxT], following a chunk that
// ended at prevMaxT (0 for the first chunk).
func appendClosedHeader(b []byte, n int, minT, maxT, prevMaxT int64) []byte {
	b = binary.AppendUvarint(b, uint64(n))
	b = binary.AppendVarint(b, minT-prevMaxT)
	return binary.AppendUvarint(b, uint64(maxT-minT))
}

// nextClosed decodes the first chunk of a closed-chunk string, which
// follows a chunk that ended at prevMaxT (0 at the start of the string),
// and returns the rest. Loops pass the chunk they decoded last, zero
// before the first:
//
//	var c closedChunk
//	for rest := s.closed(); rest != ""; {
//		c, rest = nextClosed(rest, c.maxT)
//	}
func nextClosed(closed string, prevMaxT int64) (closedChunk, string) {
	b := unsafe.Slice(unsafe.StringData(closed), min(len(closed), maxClosedHeader))
	n, i := binary.Uvarint(b)
	delta, j := binary.Varint(b[i:])
	span, k := binary.Uvarint(b[i+j:])
	h := i + j + k
	minT := prevMaxT + delta
	return closedChunk{data: closed[h : h+int(n)], minT: minT, maxT: minT + int64(span)}, closed[h+int(n):]
}

// memSeries is one series. Closed chunks are immutable once cut, so queries
// share them; only the head chunk is copied for a query. It is 48 bytes:
// a series' bookkeeping is most of what the store holds besides samples.
type memSeries struct {
	// idx is the series' slot, gen the slot's generation when the series
	// took it; together they are its reference. gen is 0 once the series
	// is removed from the index (by Trim or Delete): appenders holding it
	// then re-resolve by labels.
	idx uint32
	gen atomic.Uint32
	// acct is the series' namespace's account, which its bytes are
	// charged to.
	acct *nsAccount

	// The fields below are guarded by the series' lock (lock, unlock).
	// cold holds what changes at most once a chunk, in one exactly sized
	// string: the series' labels as symbol ids (a uvarint length, then a
	// uvarint id of each label's name and value: see symbols), then the
	// closed chunks (see nextClosed). The labels part never changes.
	cold string
	// hp is the head chunk, which still takes samples, as kind says:
	// an XOR head's buffer (xorHead, whose length and capacity are xn and
	// xc), an *otherHead, or nothing when the series has no head (a full
	// XOR chunk is closed at once: see appendFloat). One pointer for
	// either keeps the record in the allocator's 48-byte class.
	hp     unsafe.Pointer
	xn, xc uint16
	kind   headKind
}

// headKind says what memSeries.head points to.
type headKind uint8

const (
	headNone headKind = iota
	headXOR
	headOther
)

// xor is the series' XOR head; inactive when it has none.
func (s *memSeries) xor() xorHead {
	if s.kind != headXOR {
		return xorHead{}
	}
	return xorHead{p: (*byte)(s.hp), n: s.xn, c: s.xc}
}

// setXOR makes h the series' head.
func (s *memSeries) setXOR(h xorHead) {
	s.hp, s.xn, s.xc, s.kind = unsafe.Pointer(h.p), h.n, h.c, headXOR
}

// other is the series' head of another encoding, or nil.
func (s *memSeries) other() *otherHead {
	if s.kind != headOther {
		return nil
	}
	return (*otherHead)(s.hp)
}

// setOther makes o the series' head.
func (s *memSeries) setOther(o *otherHead) {
	s.hp, s.xn, s.xc, s.kind = unsafe.Pointer(o), 0, 0, headOther
}

// dropHead leaves the series without a head chunk.
func (s *memSeries) dropHead() { s.hp, s.xn, s.xc, s.kind = nil, 0, 0, headNone }

// coldLabelRefs returns the label symbol ids at the start of a cold
// string (see memSeries.cold).
func coldLabelRefs(cold string) string {
	n, i := binary.Uvarint(unsafe.Slice(unsafe.StringData(cold), min(len(cold), binary.MaxVarintLen32)))
	return cold[i : i+int(n)]
}

// labelsEnd is where the label part of cold ends and the closed chunks
// begin.
func (s *memSeries) labelsEnd() int {
	n, i := binary.Uvarint(unsafe.Slice(unsafe.StringData(s.cold), min(len(s.cold), binary.MaxVarintLen32)))
	return i + int(n)
}

// labelRefs are the series' label symbol ids; the caller holds the
// series' lock.
func (s *memSeries) labelRefs() string { return coldLabelRefs(s.cold) }

// closed returns the closed chunks (see nextClosed).
func (s *memSeries) closed() string { return s.cold[s.labelsEnd():] }

// ref is the series' reference, as appenders hand it out.
func (s *memSeries) ref() storage.SeriesRef {
	return storage.SeriesRef(uint64(s.gen.Load())<<32 | uint64(s.idx))
}

// deleted reports whether the series left the index.
func (s *memSeries) deleted() bool { return s.gen.Load() == 0 }

func (s *memSeries) empty() bool { return !s.hasHead() && s.labelsEnd() == len(s.cold) }

func (s *memSeries) hasHead() bool { return s.kind != headNone }

// chunkBytes is what the series' chunks take, as charged against
// Options.MaxBytes: the closed chunks' string and the head's buffer,
// spare capacity included (it is memory the series holds).
func (s *memSeries) chunkBytes() int {
	n := len(s.cold) - s.labelsEnd() + s.xor().capacity()
	if o := s.other(); o != nil {
		n += len(o.chunk.Bytes())
	}
	return n
}

// head describes the head chunk: its encoding, bytes, sample count and
// time range; ok is false when the series has none.
func (s *memSeries) head() (enc chunkenc.Encoding, b []byte, samples int, minT, maxT int64, ok bool) {
	switch s.kind {
	case headXOR:
		h := s.xor()
		return chunkenc.EncXOR, h.bytes(), h.samples(), h.minT(), h.lastT(), true
	case headOther:
		o := s.other()
		return o.chunk.Encoding(), o.chunk.Bytes(), o.chunk.NumSamples(), o.minT, o.maxT, true
	}
	return chunkenc.EncNone, nil, 0, 0, 0, false
}

// lastT is the timestamp of the newest sample: the head's end, or the
// newest closed chunk's when a full XOR head was just closed.
func (s *memSeries) lastT() int64 {
	switch s.kind {
	case headXOR:
		return s.xor().lastT()
	case headOther:
		return s.other().maxT
	}
	if s.closed() == "" {
		return math.MinInt64
	}
	return s.lastClosed().maxT
}

// lastFloat reports the newest closed chunk's last value when the series
// has no head, for the duplicate check; ok is false when that chunk holds
// no float samples.
func (s *memSeries) lastFloat() (v float64, ok bool) {
	last := s.lastClosed()
	if last.data == "" {
		return 0, false
	}
	chk, err := chunkenc.FromData(last.encoding(), last.bytes())
	if err != nil {
		return 0, false
	}
	it := chk.Iterator(nil)
	typ := chunkenc.ValNone
	for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
		typ = vt
		if vt == chunkenc.ValFloat {
			_, v = it.At()
		}
	}
	return v, typ == chunkenc.ValFloat
}

// appendChunks appends the closed chunks and a copy of the head, all of
// them or (inRange) those overlapping [mint, maxt], to dst. The head's
// bytes are copied to the end of arena, so that one query's copies share
// an allocation; when arena has no capacity yet, the new one gets fresh
// bytes (the caller's estimate for every head still to copy). The caller
// holds the series' lock.
func (s *memSeries) appendChunks(dst []closedChunk, arena []byte, fresh int, inRange bool, mint, maxt int64) ([]closedChunk, []byte) {
	enc, b, _, minT, maxT, ok := s.head()
	// Closed chunks end before the head begins, so a range starting in
	// the head (a rate over the last minute) needs none of them, and their
	// headers are not even read.
	if !inRange || !ok || mint < minT {
		var c closedChunk
		for rest := s.closed(); rest != ""; {
			c, rest = nextClosed(rest, c.maxT)
			if !inRange || c.maxT >= mint && c.minT <= maxt {
				dst = append(dst, c)
			}
		}
	}
	if ok && (!inRange || maxT >= mint && minT <= maxt) {
		if cap(arena)-len(arena) < 1+len(b) {
			// Earlier copies keep the old arena alive; nothing moves. The
			// first arena was sized for every head, so a smaller one
			// finishes the query.
			n := cap(arena) / 2
			if cap(arena) == 0 {
				n = fresh
			}
			arena = make([]byte, 0, max(n, 1+len(b)))
		}
		from := len(arena)
		arena = append(arena, byte(enc))
		arena = append(arena, b...)
		data := arena[from:]
		dst = append(dst, closedChunk{data: unsafe.String(unsafe.SliceData(data), len(data)), minT: minT, maxT: maxT})
	}
	return dst, arena
}

// lastClosedEncoding is the encoding of the newest closed chunk, or
// EncNone.
func (s *memSeries) lastClosedEncoding() chunkenc.Encoding {
	if s.closed() == "" {
		return chunkenc.EncNone
	}
	return s.lastClosed().encoding()
}

// lastClosed is the newest closed chunk; zero when there is none.
func (s *memSeries) lastClosed() closedChunk {
	var c closedChunk
	for rest := s.closed(); rest != ""; {
		c, rest = nextClosed(rest, c.maxT)
	}
	return c
}

// closeHead moves the head chunk to the closed ones and returns its
// length.
func (s *memSeries) closeHead() int {
	enc, b, _, minT, maxT, _ := s.head()
	var hdr [maxClosedHeader]byte
	h := appendClosedHeader(hdr[:0], 1+len(b), minT, maxT, s.lastClosed().maxT)
	buf := make([]byte, 0, len(s.cold)+len(h)+1+len(b))
	buf = append(buf, s.cold...)
	buf = append(buf, h...)
	buf = append(buf, byte(enc))
	buf = append(buf, b...)
	s.cold = unsafe.String(unsafe.SliceData(buf), len(buf))
	s.dropHead()
	return len(b)
}

// trim drops the chunks entirely older than cut and returns the bytes it
// freed (as chunkBytes counts them).
func (s *memSeries) trim(cut int64) int {
	before := s.chunkBytes()
	end := s.labelsEnd()
	rest := s.cold[end:]
	var prev closedChunk
	for rest != "" {
		c, next := nextClosed(rest, prev.maxT)
		if c.maxT >= cut {
			break
		}
		prev, rest = c, next
	}
	if len(rest) != len(s.cold)-end {
		// A copy, so the expired chunks' memory is freed. The new first
		// chunk's header gives its start in full, as it has no chunk
		// before it any more.
		var b []byte
		if rest != "" {
			first, after := nextClosed(rest, prev.maxT)
			var hdr [maxClosedHeader]byte
			h := appendClosedHeader(hdr[:0], len(first.data), first.minT, first.maxT, 0)
			b = make([]byte, 0, end+len(h)+len(first.data)+len(after))
			b = append(b, s.cold[:end]...)
			b = append(b, h...)
			b = append(b, first.data...)
			b = append(b, after...)
		} else {
			b = append([]byte(nil), s.cold[:end]...)
		}
		s.cold = unsafe.String(unsafe.SliceData(b), len(b))
	}
	if s.hasHead() && s.lastT() < cut {
		s.dropHead()
	}
	return before - s.chunkBytes()
}

// cutHead closes the head chunk and starts a new one of encoding enc.
func (s *memSeries) cutHead(enc chunkenc.Encoding, t int64, minValid int64) error {
	sizeHint := 0
	if s.hasHead() {
		sizeHint = s.closeHead()
	} else {
		// A full XOR chunk closed at its last sample: the next one is
		// sized after it.
		if c := s.lastClosed(); c.data != "" {
			sizeHint = len(c.data) - 1
		}
	}
	if minValid != math.MinInt64 {
		// The caller measures the chunk bytes before and after, which
		// counts what this frees.
		_ = s.trim(minValid)
	}
	if enc == chunkenc.EncXOR {
		var h xorHead
		h.start(t, sizeHint)
		s.setXOR(h)
		return nil
	}
	c, err := chunkenc.NewEmptyChunk(enc)
	if err != nil {
		return fmt.Errorf("new chunk: %w", err)
	}
	app, err := c.Appender()
	if err != nil {
		return fmt.Errorf("chunk appender: %w", err)
	}
	s.setOther(&otherHead{chunk: c, app: app, minT: t, maxT: t})
	return nil
}

// checkOrder applies the head's rules: no out-of-order samples, and a
// repeated timestamp is only accepted (and dropped) when the value is equal.
func (s *memSeries) checkOrder(t int64, same func() bool) (dup bool, err error) {
	if last := s.lastT(); t > last {
		return false, nil
	} else if t < last {
		return false, storage.ErrOutOfOrderSample
	}
	if same() {
		return true, nil
	}
	return false, storage.ErrDuplicateSampleForTimestamp
}

// appendFloat appends one float sample and returns how many bytes its
// chunks grew by (negative when cutting a chunk let retention drop older
// ones), for the store's byte account.
func (s *memSeries) appendFloat(st, t int64, v float64, minValid int64) (grown int, err error) {
	s.lock()
	defer s.unlock()
	if s.deleted() {
		return 0, errSeriesDeleted
	}
	dup, err := s.checkOrder(t, func() bool {
		switch s.kind {
		case headXOR:
			return math.Float64bits(s.xor().lastV()) == math.Float64bits(v)
		case headOther:
			o := s.other()
			return o.lastHist == nil && math.Float64bits(o.lastV) == math.Float64bits(v)
		}
		last, ok := s.lastFloat()
		return ok && math.Float64bits(last) == math.Float64bits(v)
	})
	if dup || err != nil {
		return 0, err
	}
	if s.kind == headXOR && st == 0 {
		// The common case, a scraped sample to an XOR head that has room
		// (a full one is closed at once): only the buffer's capacity can
		// change, unless the sample fills the chunk.
		h := s.xor()
		c := h.capacity()
		h.append(t, v)
		s.setXOR(h)
		grown = h.capacity() - c
		if h.samples() >= samplesPerChunk {
			// The chunk is full: closed now, it takes its exact size
			// rather than its buffer's, and the series no head until its
			// next sample.
			before := s.chunkBytes()
			s.closeHead()
			grown += s.chunkBytes() - before
		}
		return grown, nil
	}
	before := s.chunkBytes()
	defer func() { grown = s.chunkBytes() - before }()
	// Scraped samples carry no start timestamp and go to classic XOR
	// chunks, which are as small as XOR2 on scrape data and faster to
	// decode. A sample with a start timestamp needs XOR2, which stores it;
	// an XOR2 chunk keeps taking samples without one.
	enc := chunkenc.EncXOR
	if st != 0 {
		enc = chunkenc.EncXOR2
	}
	if cur, _, n, _, _, ok := s.head(); !ok || n >= samplesPerChunk ||
		(cur != enc && cur != chunkenc.EncXOR2) {
		if err := s.cutHead(enc, t, minValid); err != nil {
			return 0, err
		}
	}
	if s.kind == headXOR {
		h := s.xor()
		h.append(t, v)
		s.setXOR(h)
		return 0, nil
	}
	o := s.other()
	o.app.Append(st, t, v)
	o.maxT = t
	o.lastV, o.lastHist = v, nil
	return 0, nil
}

// appendHistogram appends one histogram sample and returns how many bytes
// its chunks grew by, as appendFloat does.
func (s *memSeries) appendHistogram(st, t int64, h *histogram.Histogram, fh *histogram.FloatHistogram, minValid int64) (grown int, err error) {
	s.lock()
	defer s.unlock()
	if s.deleted() {
		return 0, errSeriesDeleted
	}
	dup, err := s.checkOrder(t, func() bool {
		o := s.other()
		if o == nil || o.lastHist == nil {
			return false
		}
		last := o.lastHist
		if h != nil {
			return last.h != nil && h.Equals(last.h)
		}
		return last.fh != nil && fh.Equals(last.fh)
	})
	if dup || err != nil {
		return 0, err
	}
	before := s.chunkBytes()
	defer func() { grown = s.chunkBytes() - before }()
	enc := chunkenc.EncFloatHistogramST
	if h != nil {
		enc = chunkenc.EncHistogramST
	}
	// Only a histogram head's appender can be the previous one (an XOR
	// head's encoding differs, so it would be dropped below).
	var prev chunkenc.Appender
	if o := s.other(); o != nil {
		prev = o.app
	}
	if cur, b, n, _, _, ok := s.head(); !ok || cur != enc || n >= samplesPerChunk || len(b) >= maxHistogramChunkBytes {
		if err := s.cutHead(enc, t, minValid); err != nil {
			return 0, err
		}
		// The previous appender lets the new chunk detect a counter reset
		// across the chunk boundary; only a chunk of the same kind can tell.
		if prev != nil && s.labelsEnd() != len(s.cold) && s.lastClosedEncoding() != enc {
			prev = nil
		}
	} else {
		prev = nil
	}
	var (
		c       chunkenc.Chunk
		recoded bool
		app     chunkenc.Appender
		o       = s.other()
	)
	if h != nil {
		c, recoded, app, err = o.app.AppendHistogram(prev, st, t, h, false)
	} else {
		c, recoded, app, err = o.app.AppendFloatHistogram(prev, st, t, fh, false)
	}
	if err != nil {
		return 0, fmt.Errorf("append histogram: %w", err)
	}
	o.app = app
	switch {
	case c == nil:
	case recoded:
		o.chunk = c
	default:
		s.closeHead()
		o = &otherHead{chunk: c, app: app, minT: t}
		s.setOther(o)
	}
	o.maxT = t
	// Keep a copy: callers may reuse the histogram they passed in.
	if h != nil {
		o.lastHist = &lastHistogram{h: h.Copy()}
	} else {
		o.lastHist = &lastHistogram{fh: fh.Copy()}
	}
	return 0, nil
}
