package promql

import (
	"sync"

	"github.com/prometheus/prometheus/model/labels"
)

// seriesTable finds a series by its labels: open addressing with linear
// probing, each cell the low 32 bits of the labels' hash and the series'
// slot plus one (zero is an empty cell). A cell's home is its hash scaled
// to the table's length, which need not be a power of two: the table
// grows by half, to at most three quarters full, so it takes 8 to 16
// bytes a series (12 on average), where a map of hashes to series and a
// chain pointer in every series for equal hashes took about 40. It is
// guarded by Store.mtx.
type seriesTable struct {
	cells []uint64
	n     int
}

func tableCell(h uint64, idx uint32) uint64 { return h<<32 | (uint64(idx) + 1) }

// home is where a cell with hash h starts its probe.
func (t *seriesTable) home(h uint64) int {
	return int(uint64(uint32(h)) * uint64(len(t.cells)) >> 32)
}

// next is the cell after i, wrapping around.
func (t *seriesTable) next(i int) int {
	if i++; i == len(t.cells) {
		return 0
	}
	return i
}

// find returns the series with these labels, whose hash is h.
func (t *seriesTable) find(s *Store, lset labels.Labels, h uint64) *memSeries {
	if len(t.cells) == 0 {
		return nil
	}
	for i := t.home(h); ; i = t.next(i) {
		c := t.cells[i]
		if c == 0 {
			return nil
		}
		if uint32(c>>32) != uint32(h) {
			continue
		}
		if ser := s.slot(uint32(c) - 1).Load(); ser != nil && s.hasLabels(ser, lset) {
			return ser
		}
	}
}

// insert adds the series in slot idx, whose labels hash to h.
func (t *seriesTable) insert(h uint64, idx uint32) {
	if 4*(t.n+1) > 3*len(t.cells) {
		old := t.cells
		t.cells = make([]uint64, max(64, len(old)+len(old)/2))
		t.n = 0
		for _, c := range old {
			if c != 0 {
				t.put(c)
			}
		}
	}
	t.put(tableCell(h, idx))
}

func (t *seriesTable) put(c uint64) {
	i := t.home(c >> 32)
	for t.cells[i] != 0 {
		i = t.next(i)
	}
	t.cells[i] = c
	t.n++
}

// remove takes out the series in slot idx, whose labels hash to h, and
// moves the cells after it back so that no probe stops early.
func (t *seriesTable) remove(h uint64, idx uint32) {
	if len(t.cells) == 0 {
		return
	}
	want := tableCell(h, idx)
	i := t.home(h)
	for t.cells[i] != want {
		if t.cells[i] == 0 {
			return
		}
		i = t.next(i)
	}
	n := len(t.cells)
	for j := t.next(i); t.cells[j] != 0; j = t.next(j) {
		// The cell at j may fill the hole at i unless its home lies
		// cyclically in (i, j].
		home := t.home(t.cells[j] >> 32)
		if (j-home+n)%n >= (j-i+n)%n {
			t.cells[i] = t.cells[j]
			i = j
		}
	}
	t.cells[i] = 0
	t.n--
}

// hasLabels reports whether ser's labels are lset; the caller holds
// s.mtx.
func (s *Store) hasLabels(ser *memSeries, lset labels.Labels) bool {
	ser.lock()
	defer ser.unlock()
	return s.syms.equal(ser.labelRefs(), lset)
}

// seriesLocks guard the series' chunks and head: a lock per series would
// take 8 bytes of every series, and appends to one series are short, so
// series share 1,024 locks by slot.
var seriesLocks [1024]sync.Mutex

func (s *memSeries) lock()   { seriesLocks[s.idx%uint32(len(seriesLocks))].Lock() }
func (s *memSeries) unlock() { seriesLocks[s.idx%uint32(len(seriesLocks))].Unlock() }
