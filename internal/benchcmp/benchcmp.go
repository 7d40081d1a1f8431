// Package benchcmp reads `go test -bench` output and compares it with a
// stored baseline (hack/bench/baseline.txt), for `make bench` and for the
// allocation checks `make test` runs.
//
// Allocation counts are the same from run to run on any machine, so a
// rise past a small margin fails. Time depends on the machine and on what
// else runs on it, so it is reported as a ratio and fails only past a
// wide margin (Options.MaxTimeRatio), which a slower or busier machine
// does not reach but a tick that doubles does.
package benchcmp

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Result is one benchmark's figures: the median over the runs read (the
// -count repetitions), per unit ("ns/op", "allocs/op", "B/op" and any
// custom metric such as "ns/workload").
type Result struct {
	Name    string
	Runs    int
	Metrics map[string]float64
}

// Parse reads `go test -bench` output and returns the results by name.
// The -N GOMAXPROCS suffix is dropped from names, so a baseline taken with
// one -cpu compares with a run taken with another. Lines that are not
// benchmark results are skipped.
func Parse(r io.Reader) (map[string]Result, error) {
	runs := map[string]map[string][]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := cpuSuffix.ReplaceAllString(f[0], "")
		if runs[name] == nil {
			runs[name] = map[string][]float64{}
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: value %q of %s is not a number", name, f[i], f[i+1])
			}
			runs[name][f[i+1]] = append(runs[name][f[i+1]], v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make(map[string]Result, len(runs))
	for name, units := range runs {
		res := Result{Name: name, Metrics: map[string]float64{}}
		for unit, vs := range units {
			res.Runs = max(res.Runs, len(vs))
			res.Metrics[unit] = median(vs)
		}
		out[name] = res
	}
	return out, nil
}

var cpuSuffix = regexp.MustCompile(`-\d+$`)

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ParseFile is Parse of a file.
func ParseFile(path string) (map[string]Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}

// Options are the margins past which a comparison fails.
type Options struct {
	// MaxAllocRatio is the most allocs/op may grow, as a ratio of the
	// baseline (1.03: three per cent).
	MaxAllocRatio float64
	// MaxTimeRatio is the most ns/op may grow; 0 never fails on time.
	MaxTimeRatio float64
}

// DefaultOptions: three per cent more allocations fail; time fails past
// three times the baseline only.
var DefaultOptions = Options{MaxAllocRatio: 1.03, MaxTimeRatio: 3}

// Row is one benchmark of the baseline compared.
type Row struct {
	Name                  string
	BaseNs, Ns            float64
	BaseAllocs, Allocs    float64
	Missing               bool
	AllocRatio, TimeRatio float64
	// Failure says which margin the row passed; "" when none.
	Failure string
}

// Compare compares every benchmark of base that cur holds; benchmarks of
// base missing from cur are rows marked Missing (a run of some packages
// only is allowed) and never fail.
func Compare(base, cur map[string]Result, opts Options) []Row {
	names := make([]string, 0, len(base))
	for n := range base {
		names = append(names, n)
	}
	sort.Strings(names)
	var rows []Row
	for _, n := range names {
		b := base[n]
		row := Row{Name: n, BaseNs: b.Metrics["ns/op"], BaseAllocs: b.Metrics["allocs/op"]}
		c, ok := cur[n]
		if !ok {
			row.Missing = true
			rows = append(rows, row)
			continue
		}
		row.Ns, row.Allocs = c.Metrics["ns/op"], c.Metrics["allocs/op"]
		row.TimeRatio = ratio(row.Ns, row.BaseNs)
		row.AllocRatio = ratio(row.Allocs, row.BaseAllocs)
		var fails []string
		if opts.MaxAllocRatio > 0 && row.Allocs > row.BaseAllocs*opts.MaxAllocRatio {
			fails = append(fails, fmt.Sprintf("allocs/op %.0f is over %.2f × the baseline %.0f", row.Allocs, opts.MaxAllocRatio, row.BaseAllocs))
		}
		if opts.MaxTimeRatio > 0 && row.BaseNs > 0 && row.Ns > row.BaseNs*opts.MaxTimeRatio {
			fails = append(fails, fmt.Sprintf("ns/op %.0f is over %.1f × the baseline %.0f", row.Ns, opts.MaxTimeRatio, row.BaseNs))
		}
		row.Failure = strings.Join(fails, "; ")
		rows = append(rows, row)
	}
	return rows
}

func ratio(v, base float64) float64 {
	if base == 0 {
		if v == 0 {
			return 1
		}
		return 0
	}
	return v / base
}

// Write prints rows as a table and returns how many failed.
func Write(w io.Writer, rows []Row) int {
	failed := 0
	fmt.Fprintf(w, "%-40s %14s %14s %7s %12s %12s %7s\n", "benchmark", "base ns/op", "ns/op", "time", "base allocs", "allocs/op", "allocs")
	for _, r := range rows {
		if r.Missing {
			fmt.Fprintf(w, "%-40s %14.0f %14s %7s %12.0f %12s %7s\n", r.Name, r.BaseNs, "-", "-", r.BaseAllocs, "-", "-")
			continue
		}
		fmt.Fprintf(w, "%-40s %14.0f %14.0f %6.2fx %12.0f %12.0f %6.2fx\n", r.Name, r.BaseNs, r.Ns, r.TimeRatio, r.BaseAllocs, r.Allocs, r.AllocRatio)
		if r.Failure != "" {
			failed++
			fmt.Fprintf(w, "  FAIL %s: %s\n", r.Name, r.Failure)
		}
	}
	return failed
}
