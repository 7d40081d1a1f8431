package promql

import (
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
)

func TestZZHeapProfile(t *testing.T) {
	runtime.MemProfileRate = 1
	s := NewStore(Options{Retention: -1})
	ingest(t, s, benchDataset)
	s.Trim()
	runtime.GC()
	runtime.GC()
	f, _ := os.Create("/tmp/store-heap.pprof")
	pprof.WriteHeapProfile(f)
	f.Close()
	runtime.KeepAlive(s)
}
