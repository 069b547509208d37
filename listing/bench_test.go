package listing

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"largo"
)

// folderEntries makes n entries like a disk folder's: names f0000000
// and on in the shuffled order a directory gives them, a size, a time
// and an ETag each.
func folderEntries(n int) []largo.Info {
	r := rand.New(rand.NewPCG(uint64(n), 1))
	out := make([]largo.Info, n)
	mod := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	for i := range out {
		out[i] = largo.Info{
			Name:    fmt.Sprintf("f%07d", i),
			Size:    r.Int64N(1 << 20),
			ModTime: mod.Add(time.Duration(r.Int64N(1e15))),
			ETag:    fmt.Sprintf(`"%x-%x-%x"`, r.Uint32(), r.Uint32(), r.Uint64()),
		}
	}
	r.Shuffle(n, func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// BenchmarkSort sorts a folder's entries, folders first, as a JSON
// listing does: in memory (10,000) and spilled to disk past the default
// memory (1,000,000).
func BenchmarkSort(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		ins := folderEntries(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			cfg := Config{Dir: b.TempDir()}
			cpu := cpuTime()
			for b.Loop() {
				s, err := cfg.NewSorter(DirsFirst)
				if err != nil {
					b.Fatal(err)
				}
				for _, in := range ins {
					if err := s.Add(in); err != nil {
						b.Fatal(err)
					}
				}
				got := 0
				for _, err := range s.All() {
					if err != nil {
						b.Fatal(err)
					}
					got++
				}
				s.Close()
				if got != n {
					b.Fatalf("%d entries back of %d", got, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/entry")
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N)/float64(n), "cpu-ns/entry")
		})
	}
}

// cpuTime is the CPU time of this process so far, user and system: on a
// shared machine a steadier figure than the wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
