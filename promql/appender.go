package promql

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/storage"
)

// Appender implements storage.Appendable. Samples become visible on Commit,
// like in Prometheus' head, so a query never sees half a scrape.
func (s *Store) Appender(context.Context) storage.Appender { return &appender{store: s} }

// AppenderV2 implements storage.AppendableV2 (what promqltest loads data with).
func (s *Store) AppenderV2(context.Context) storage.AppenderV2 {
	return &appenderV2{appender{store: s}}
}

type pending struct {
	ser *memSeries
	// lset are the series' labels, to find it again if retention removes
	// it before Commit (a removed series' labels are gone from the store).
	lset  labels.Labels
	st, t int64
	v     float64
	h     *histogram.Histogram
	fh    *histogram.FloatHistogram
}

type appender struct {
	store   *Store
	pending []pending
}

// pendingPool recycles transaction buffers: the scraper opens one
// transaction per target per cycle, and each would otherwise allocate and
// grow its own.
var pendingPool = sync.Pool{New: func() any { return new([]pending) }}

func (a *appender) release() {
	if a.pending == nil {
		return
	}
	clear(a.pending) // drop series pointers so expired series can be freed
	buf := a.pending[:0]
	pendingPool.Put(&buf)
	a.pending = nil
}

func (a *appender) series(ref storage.SeriesRef, lset labels.Labels) (*memSeries, error) {
	if ref != 0 {
		if ser := a.store.byRef(ref); ser != nil && !ser.deleted() {
			return ser, nil
		}
	}
	ser, _, err := a.store.getOrCreate(lset)
	return ser, err
}

func (a *appender) add(ref storage.SeriesRef, lset labels.Labels, p pending) (storage.SeriesRef, error) {
	ser, err := a.series(ref, lset)
	if err != nil {
		return 0, err
	}
	p.ser = ser
	if lset.IsEmpty() {
		// Found by reference alone: the store's copy of its labels.
		lset = a.store.labelsOf(ser)
	}
	p.lset = lset
	if a.pending == nil {
		a.pending = *pendingPool.Get().(*[]pending)
	}
	a.pending = append(a.pending, p)
	return ser.ref(), nil
}

func (a *appender) Append(ref storage.SeriesRef, lset labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	return a.add(ref, lset, pending{t: t, v: v})
}

func (a *appender) AppendHistogram(ref storage.SeriesRef, lset labels.Labels, t int64, h *histogram.Histogram, fh *histogram.FloatHistogram) (storage.SeriesRef, error) {
	if h == nil && fh == nil {
		return 0, errors.New("append histogram: no histogram given")
	}
	return a.add(ref, lset, pending{t: t, h: h, fh: fh})
}

// AppendHistogramSTZeroSample, AppendSTZeroSample, AppendExemplar and
// UpdateMetadata are accepted and ignored: the store keeps start timestamps
// inside chunks (AppenderV2) and has no use for exemplars or metadata.
func (*appender) AppendHistogramSTZeroSample(ref storage.SeriesRef, _ labels.Labels, _, _ int64, _ *histogram.Histogram, _ *histogram.FloatHistogram) (storage.SeriesRef, error) {
	return ref, nil
}

func (*appender) AppendSTZeroSample(ref storage.SeriesRef, _ labels.Labels, _, _ int64) (storage.SeriesRef, error) {
	return ref, nil
}

func (*appender) AppendExemplar(ref storage.SeriesRef, _ labels.Labels, _ exemplar.Exemplar) (storage.SeriesRef, error) {
	return ref, nil
}

func (*appender) UpdateMetadata(ref storage.SeriesRef, _ labels.Labels, _ metadata.Metadata) (storage.SeriesRef, error) {
	return ref, nil
}

func (*appender) SetOptions(*storage.AppendOptions) {}

// Commit applies the buffered samples in order. Samples that break ordering
// rules, or arrive while the store is past Options.MaxBytes, are dropped
// and reported together (the first few, and how many), as the head does;
// the rest are kept.
func (a *appender) Commit() error {
	minValid := a.store.minValidTime.Load()
	var (
		errs    []error
		dropped int
		// grown is what this transaction added to the store's chunks,
		// charged once at the end: one atomic add per scrape, not per
		// sample.
		grown int64
	)
	for _, p := range a.pending {
		err := errSeriesDeleted
		for errors.Is(err, errSeriesDeleted) {
			if p.ser.deleted() {
				if p.ser, _, err = a.store.getOrCreate(p.lset); err != nil {
					break
				}
			}
			if err = a.store.admitSample(p.ser, p.v, grown); err != nil {
				break
			}
			var n int
			if p.h != nil || p.fh != nil {
				n, err = p.ser.appendHistogram(p.st, p.t, p.h, p.fh, minValid)
			} else {
				n, err = p.ser.appendFloat(p.st, p.t, p.v, minValid)
			}
			if n != 0 {
				grown += int64(n)
				p.ser.acct.used.Add(int64(n))
			}
		}
		if err != nil {
			dropped++
			if len(errs) < maxCommitErrors {
				errs = append(errs, fmt.Errorf("series %.200s at %d: %w", p.lset.String(), p.t, err))
			}
		}
	}
	a.store.used.Add(grown)
	a.release()
	if dropped > len(errs) {
		errs = append(errs, fmt.Errorf("and %d more samples dropped", dropped-len(errs)))
	}
	return errors.Join(errs...)
}

// maxCommitErrors is how many dropped samples a commit describes: a
// scrape may have thousands dropped for the same reason.
const maxCommitErrors = 5

func (a *appender) Rollback() error {
	a.release()
	return nil
}

type appenderV2 struct{ appender }

func (a *appenderV2) Append(ref storage.SeriesRef, lset labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, _ storage.AppendV2Options) (storage.SeriesRef, error) {
	return a.add(ref, lset, pending{st: st, t: t, v: v, h: h, fh: fh})
}
