package promql

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// reachable reports whether a probe for (h, idx) finds its cell before an
// empty one, as find's probe does.
func (t *seriesTable) reachable(h uint64, idx uint32) bool {
	for i := t.home(h); t.cells[i] != 0; i = t.next(i) {
		if t.cells[i] == tableCell(h, idx) {
			return true
		}
	}
	return false
}

// TestSeriesTableKeepsProbesWhole removes cells from clusters of equal and
// neighbouring homes, wrapping around the table's end, and checks that
// every remaining series is still found and no removed one is.
func TestSeriesTableKeepsProbesWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 50 {
		var tab seriesTable
		live := map[uint32]uint64{}
		for idx := range uint32(40) {
			// Homes crowd the last cells of a 64-cell table (a cell's
			// home is its 32-bit hash scaled to the table), so clusters
			// wrap around.
			h := uint64((60+rng.IntN(8))%64)<<26 | uint64(rng.IntN(1<<20)) | uint64(rng.IntN(4))<<40
			tab.insert(h, idx)
			live[idx] = h
		}
		for idx, h := range live {
			if rng.IntN(2) == 0 {
				tab.remove(h, idx)
				delete(live, idx)
				if tab.reachable(h, idx) {
					t.Fatalf("round %d: removed slot %d still found", round, idx)
				}
			}
		}
		if tab.n != len(live) {
			t.Fatalf("round %d: table counts %d series, %d live", round, tab.n, len(live))
		}
		for idx, h := range live {
			if !tab.reachable(h, idx) {
				t.Fatalf("round %d: slot %d (hash %#x) not found", round, idx, h)
			}
		}
	}
}

// TestStoreFindsSeriesByLabelsAfterDeletes deletes every third series of
// a store and appends to all of them again by labels: the live ones keep
// their references, the deleted ones come back as new series.
func TestStoreFindsSeriesByLabelsAfterDeletes(t *testing.T) {
	s := NewStore(Options{Retention: -1, MaxSeries: -1, MaxBytes: -1, MaxSeriesPerNamespace: -1, MaxBytesPerNamespace: -1})
	var lsets []labels.Labels
	refs := map[int]uint64{}
	for i := range 3000 {
		ls := labels.FromStrings("__name__", "m", "namespace", "ns", "i", fmt.Sprint(i))
		lsets = append(lsets, ls)
		ser, created, err := s.getOrCreate(ls)
		if err != nil || !created {
			t.Fatalf("series %d: created %v, %v", i, created, err)
		}
		refs[i] = uint64(ser.ref())
	}
	var gone []labels.Labels
	for i := 0; i < len(lsets); i += 3 {
		gone = append(gone, lsets[i])
	}
	if n := s.Delete(gone); n != len(gone) {
		t.Fatalf("deleted %d series, want %d", n, len(gone))
	}
	for i, ls := range lsets {
		ser, created, err := s.getOrCreate(ls)
		if err != nil {
			t.Fatal(err)
		}
		if wantNew := i%3 == 0; created != wantNew {
			t.Errorf("series %d: created %v, want %v", i, created, wantNew)
		}
		if i%3 != 0 && uint64(ser.ref()) != refs[i] {
			t.Errorf("series %d: ref %x, was %x", i, ser.ref(), refs[i])
		}
	}
	if u := s.Usage(); u.Series != len(lsets) {
		t.Errorf("%d series, want %d", u.Series, len(lsets))
	}
}
