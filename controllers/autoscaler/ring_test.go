package autoscaler

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/scaleplane/scaleplane/scaling"
)

// The explain ring keeps the last n records oldest first, holds no buffer
// before its first record and never more than n records after.
func TestRingKeepsTheLastRecordsAndGrowsOnlyWhenUsed(t *testing.T) {
	r := newRing(5)
	if r.buf != nil || len(r.list()) != 0 {
		t.Fatalf("an unused ring holds %d records in a buffer of %d", len(r.buf), cap(r.buf))
	}
	var want []int32
	for i := range int32(12) {
		r.add(Record{Decision: scaling.Decision{Current: i}})
		want = append(want, i)
		if len(want) > 5 {
			want = want[1:]
		}
		var got []int32
		for _, rec := range r.list() {
			got = append(got, rec.Current)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("after %d records (-want +got):\n%s", i+1, diff)
		}
		if cap(r.buf) > 5 {
			t.Fatalf("after %d records the buffer holds room for %d, more than 5", i+1, cap(r.buf))
		}
	}
}
