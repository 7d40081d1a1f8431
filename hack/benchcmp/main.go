// Command benchcmp compares `go test -bench` output on its standard input
// with a baseline file and exits 1 when a benchmark allocates more than
// the margin allows, or takes far longer (see internal/benchcmp).
//
//	go -C controllers/autoscaler test -run '^$' -bench Tick1000 -benchmem . | go run ./hack/benchcmp -baseline hack/bench/baseline.txt
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/scaleplane/scaleplane/internal/benchcmp"
)

func main() {
	baseline := flag.String("baseline", "hack/bench/baseline.txt", "`go test -bench` output to compare with")
	allocs := flag.Float64("max-alloc-ratio", benchcmp.DefaultOptions.MaxAllocRatio, "fail when allocs/op exceed the baseline's by this ratio")
	timeRatio := flag.Float64("max-time-ratio", benchcmp.DefaultOptions.MaxTimeRatio, "fail when ns/op exceed the baseline's by this ratio (0: never)")
	echo := flag.Bool("echo", true, "copy the input to standard output as it is read")
	flag.Parse()
	base, err := benchcmp.ParseFile(*baseline)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcmp:", err)
		os.Exit(2)
	}
	var in io.Reader = os.Stdin
	if *echo {
		in = io.TeeReader(os.Stdin, os.Stdout)
	}
	cur, err := benchcmp.Parse(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcmp:", err)
		os.Exit(2)
	}
	if len(cur) == 0 {
		fmt.Fprintln(os.Stderr, "benchcmp: no benchmark results on standard input")
		os.Exit(2)
	}
	fmt.Printf("\ncompared with %s (time fails past %.1fx only: it depends on the machine)\n", *baseline, *timeRatio)
	if failed := benchcmp.Write(os.Stdout, benchcmp.Compare(base, cur, benchcmp.Options{MaxAllocRatio: *allocs, MaxTimeRatio: *timeRatio})); failed > 0 {
		fmt.Printf("%d benchmark(s) past the baseline's margin: fix the regression, or refresh the baseline with `make bench-baseline` and say why in the commit\n", failed)
		os.Exit(1)
	}
}
