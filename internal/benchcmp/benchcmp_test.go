package benchcmp

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const base = `goos: linux
BenchmarkTick1000     	       3	  40000000 ns/op	 272.8 allocs/workload	18370754 B/op	  272748 allocs/op
BenchmarkTick1000     	       3	  50000000 ns/op	 272.8 allocs/workload	18370754 B/op	  272748 allocs/op
BenchmarkTick1000     	       3	 900000000 ns/op	 272.8 allocs/workload	18370754 B/op	  272748 allocs/op
BenchmarkDecide-2     	  250000	      4924 ns/op	     1984 B/op	      22 allocs/op
PASS
`

func TestParseTakesTheMedianAndDropsTheCPUSuffix(t *testing.T) {
	got, err := Parse(strings.NewReader(base))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Result{
		"BenchmarkTick1000": {Name: "BenchmarkTick1000", Runs: 3, Metrics: map[string]float64{"ns/op": 50000000, "allocs/workload": 272.8, "B/op": 18370754, "allocs/op": 272748}},
		"BenchmarkDecide":   {Name: "BenchmarkDecide", Runs: 1, Metrics: map[string]float64{"ns/op": 4924, "B/op": 1984, "allocs/op": 22}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parsed (-want +got):\n%s", diff)
	}
}

func TestCompareFailsOnAllocationsAndOnlyFarSlowerTime(t *testing.T) {
	b, _ := Parse(strings.NewReader(base))
	cur, _ := Parse(strings.NewReader(`BenchmarkTick1000 3 140000000 ns/op 300100 allocs/op
BenchmarkDecide 1000 20000 ns/op 22 allocs/op
`))
	var got []string
	for _, r := range Compare(b, cur, DefaultOptions) {
		got = append(got, r.Name+": "+r.Failure)
	}
	want := []string{
		"BenchmarkDecide: ns/op 20000 is over 3.0 × the baseline 4924",
		"BenchmarkTick1000: allocs/op 300100 is over 1.03 × the baseline 272748",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
	// A benchmark the run left out is shown and does not fail.
	rows := Compare(b, map[string]Result{}, DefaultOptions)
	if len(rows) != 2 || !rows[0].Missing || rows[0].Failure != "" {
		t.Errorf("rows of a run without the baseline's benchmarks: %+v", rows)
	}
}
