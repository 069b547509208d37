package encode

import (
	"io"
	"runtime"
	"runtime/metrics"
	"testing"
)

// TestMemoryPerStream opens, at each level and in each coding, a
// compressor and writes a log into it, enough for the encoder to have
// grown to its full size, then checks the Go heap it holds against
// MemoryPerStream: the bound the compression slots budget with. The heap is measured in this process,
// after collections, so the figure is what the encoder keeps, not what
// the runtime has yet to return; the process's resident memory is the
// benchmarks' to report (BenchmarkCompress in the end-to-end suite).
func TestMemoryPerStream(t *testing.T) {
	log := testLog(2 << 20)
	for _, level := range []Level{Fast, Default, Best} {
		e, err := NewEncoders(Config{Level: level})
		if err != nil {
			t.Fatal(err)
		}
		// What each encoder takes to reach its full size: zstd and gzip
		// their window and a little, brotli twice its largest window (its
		// block buffers and hash tables grow with the input until then).
		enough := map[Coding]int{Zstd: e.set.zstdWindow + 64<<10, Brotli: len(log), Gzip: 96 << 10}
		for _, c := range Codings {
			t.Run(level.String()+"/"+string(c), func(t *testing.T) {
				data := log[:enough[c]]
				before := liveHeap()
				w, ok := e.Writer(io.Discard, c)
				if !ok {
					t.Fatal("no slot")
				}
				if _, err := w.Write(data); err != nil {
					t.Fatal(err)
				}
				held := liveHeap() - before
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				t.Logf("%d KiB of heap held after %d KiB; bound %d KiB", held>>10, len(data)>>10, e.MemoryPerStream()>>10)
				if held > e.MemoryPerStream() {
					t.Errorf("a stream holds %d KiB of heap, over the bound of %d KiB", held>>10, e.MemoryPerStream()>>10)
				}
			})
		}
	}
}

// liveHeap collects garbage and returns the bytes of the heap objects
// that survived. Two collections empty the encoders' pools, whose
// contents survive one.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}
