package ztensor_test

// Benchmarks of loading a whole model into Go memory, each against its
// floor: the file's bytes read into one new allocation by a goroutine a
// core (ReadAt, 8 MiB a call), the way a Go program would read a file at
// the hardware's speed with no format at all. bench/bench_go.sh runs them
// for the report (BENCHMARKS.md); by hand:
//
//	ZT_BENCH_DIR=/tmp/zt go test -run '^$' -bench Load -benchtime 1x -count 5
//
// The models are written into ZT_BENCH_DIR once and kept there; without
// it the benchmarks skip, saying so.

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/libztensor/libztensor/bindings/go"
)

// benchModel is the path of a model of `big` bf16 tensors of bigBytes and
// `small` of smallBytes in ZT_BENCH_DIR, written there if it is not yet.
func benchModel(b *testing.B, name string, big, bigBytes, small, smallBytes int) string {
	b.Helper()
	dir := os.Getenv("ZT_BENCH_DIR")
	if dir == "" {
		b.Skip("set ZT_BENCH_DIR to a folder for the benchmark's model files (about 1.4 GB)")
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err == nil {
		return path
	}
	must(b, os.MkdirAll(dir, 0o755))
	w, err := ztensor.Create(path)
	must(b, err)
	data := make([]byte, max(bigBytes, smallBytes))
	for i := range data {
		data[i] = byte(i*131 + i>>9)
	}
	add := func(prefix string, n, bytes int) {
		for k := 0; k < n; k++ {
			must(b, w.AddDense(fmt.Sprintf("%s.%d", prefix, k), "bf16", []uint64{uint64(bytes / 2)}, data[:bytes], "raw"))
		}
	}
	add("big", big, bigBytes)
	add("small", small, smallBytes)
	must(b, w.Finish())
	return path
}

func max(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// The 1.1 GiB model: 32 x 32 MiB and 500 x 256 KiB (an LLM's weights
// and its norms); the small one: 4,096 x 64 KiB.
func llmModel(b *testing.B) string   { return benchModel(b, "go-llm.zt", 32, 32<<20, 500, 256<<10) }
func smallModel(b *testing.B) string { return benchModel(b, "go-small.zt", 0, 0, 4096, 64<<10) }

// loadAll opens path and decodes every tensor into new Go slices.
func loadAll(b *testing.B, path string) {
	r, err := ztensor.Open(path)
	must(b, err)
	defer r.Close()
	objects := r.Objects()
	reqs := make([]ztensor.DecodeRequest, len(objects))
	for i, o := range objects {
		reqs[i] = ztensor.DecodeRequest{Object: o.Index, Role: "data"}
	}
	must(b, r.DecodeMany(reqs, 0))
}

// readAll reads the file into one new allocation, a goroutine a core.
func readAll(b *testing.B, path string) {
	f, err := os.Open(path)
	must(b, err)
	defer f.Close()
	st, err := f.Stat()
	must(b, err)
	size := st.Size()
	buf := make([]byte, size)
	threads := int64(runtime.NumCPU())
	var wg sync.WaitGroup
	for k := int64(0); k < threads; k++ {
		wg.Add(1)
		go func(lo, hi int64) {
			defer wg.Done()
			for lo < hi {
				end := lo + 8<<20
				if end > hi {
					end = hi
				}
				n, err := f.ReadAt(buf[lo:end], lo)
				if n == 0 && err != nil {
					panic(err)
				}
				lo += int64(n)
			}
		}(size*k/threads, size*(k+1)/threads)
	}
	wg.Wait()
}

// timed runs load b.N times, each after a garbage collection outside the
// timer: each load then meets the heap as the others do, not the last
// one's garbage.
func timed(b *testing.B, path string, load func(*testing.B, string)) {
	b.ResetTimer() // not the model's writing
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		runtime.GC()
		b.StartTimer()
		load(b, path)
	}
}

func BenchmarkLoadLLMDecodeMany(b *testing.B) { timed(b, llmModel(b), loadAll) }

func BenchmarkLoadLLMFloor(b *testing.B) { timed(b, llmModel(b), readAll) }

func BenchmarkLoadSmallDecodeMany(b *testing.B) { timed(b, smallModel(b), loadAll) }

func BenchmarkLoadSmallFloor(b *testing.B) { timed(b, smallModel(b), readAll) }
