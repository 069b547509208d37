package metrics

import (
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"time"
)

// goMemory are the runtime/metrics samples the go_memstats_ gauges and
// counters are made of, each a sum of some of them.
var goMemory = []struct {
	name, help, kind string
	of               []string
}{
	{"go_memstats_alloc_bytes", "Heap bytes in live and not yet collected objects.", kindGauge, []string{"/memory/classes/heap/objects:bytes"}},
	{"go_memstats_alloc_bytes_total", "Heap bytes allocated since the start, freed or not.", kindCounter, []string{"/gc/heap/allocs:bytes"}},
	{"go_memstats_buck_hash_sys_bytes", "Bytes of the profilers' bucket table.", kindGauge, []string{"/memory/classes/profiling/buckets:bytes"}},
	{"go_memstats_frees_total", "Heap objects freed since the start.", kindCounter, []string{"/gc/heap/frees:objects", "/gc/heap/tiny/allocs:objects"}},
	{"go_memstats_gc_sys_bytes", "Bytes of the collector's own metadata.", kindGauge, []string{"/memory/classes/metadata/other:bytes"}},
	{"go_memstats_heap_alloc_bytes", "Heap bytes in live and not yet collected objects (as go_memstats_alloc_bytes).", kindGauge, []string{"/memory/classes/heap/objects:bytes"}},
	{"go_memstats_heap_idle_bytes", "Heap bytes free, returned to the system or not.", kindGauge, []string{"/memory/classes/heap/released:bytes", "/memory/classes/heap/free:bytes"}},
	{"go_memstats_heap_inuse_bytes", "Heap bytes in spans in use.", kindGauge, []string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes"}},
	{"go_memstats_heap_objects", "Heap objects live or not yet collected.", kindGauge, []string{"/gc/heap/objects:objects"}},
	{"go_memstats_heap_released_bytes", "Heap bytes returned to the system.", kindGauge, []string{"/memory/classes/heap/released:bytes"}},
	{"go_memstats_heap_sys_bytes", "Heap bytes taken from the system.", kindGauge, []string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes", "/memory/classes/heap/released:bytes", "/memory/classes/heap/free:bytes"}},
	{"go_memstats_mallocs_total", "Heap objects allocated since the start.", kindCounter, []string{"/gc/heap/allocs:objects", "/gc/heap/tiny/allocs:objects"}},
	{"go_memstats_mcache_inuse_bytes", "Bytes of the per-processor caches in use.", kindGauge, []string{"/memory/classes/metadata/mcache/inuse:bytes"}},
	{"go_memstats_mcache_sys_bytes", "Bytes taken from the system for the per-processor caches.", kindGauge, []string{"/memory/classes/metadata/mcache/inuse:bytes", "/memory/classes/metadata/mcache/free:bytes"}},
	{"go_memstats_mspan_inuse_bytes", "Bytes of span structures in use.", kindGauge, []string{"/memory/classes/metadata/mspan/inuse:bytes"}},
	{"go_memstats_mspan_sys_bytes", "Bytes taken from the system for span structures.", kindGauge, []string{"/memory/classes/metadata/mspan/inuse:bytes", "/memory/classes/metadata/mspan/free:bytes"}},
	{"go_memstats_next_gc_bytes", "The heap size at which the next collection starts.", kindGauge, []string{"/gc/heap/goal:bytes"}},
	{"go_memstats_other_sys_bytes", "Bytes of the runtime's other allocations.", kindGauge, []string{"/memory/classes/other:bytes"}},
	{"go_memstats_stack_inuse_bytes", "Bytes of goroutine stacks in the heap.", kindGauge, []string{"/memory/classes/heap/stacks:bytes"}},
	{"go_memstats_stack_sys_bytes", "Bytes of stacks, goroutines' and the system threads'.", kindGauge, []string{"/memory/classes/heap/stacks:bytes", "/memory/classes/os-stacks:bytes"}},
	{"go_memstats_sys_bytes", "Bytes the runtime took from the system.", kindGauge, []string{"/memory/classes/total:bytes"}},
	{"go_gc_gogc_percent", "The collector's target heap growth, percent (GOGC; debug.SetGCPercent).", kindGauge, []string{"/gc/gogc:percent"}},
	{"go_gc_gomemlimit_bytes", "The runtime's memory limit (GOMEMLIMIT; debug.SetMemoryLimit).", kindGauge, []string{"/gc/gomemlimit:bytes"}},
	{"go_sched_gomaxprocs_threads", "Threads that may run Go code at once (GOMAXPROCS).", kindGauge, []string{"/sched/gomaxprocs:threads"}},
}

// goRuntime is the Go runtime's figures: goroutines, threads, the
// collector's pauses, and memory as runtime/metrics counts it, under the
// names the Prometheus client's Go collector gives them.
func goRuntime() []family {
	var names []string
	for _, m := range goMemory {
		names = append(names, m.of...)
	}
	read := make([]rtmetrics.Sample, len(names))
	for i, n := range names {
		read[i].Name = n
	}
	rtmetrics.Read(read)
	figures := make(map[string]float64, len(read))
	for _, s := range read {
		switch s.Value.Kind() {
		case rtmetrics.KindUint64:
			figures[s.Name] = float64(s.Value.Uint64())
		case rtmetrics.KindFloat64:
			figures[s.Name] = s.Value.Float64()
		}
	}
	out := make([]family, 0, len(goMemory)+5)
	for _, m := range goMemory {
		var sum float64
		for _, n := range m.of {
			sum += figures[n]
		}
		out = append(out, family{name: m.name, help: m.help, kind: m.kind, samples: []sample{{value: sum}}})
	}

	gc := debug.GCStats{PauseQuantiles: make([]time.Duration, 5)}
	debug.ReadGCStats(&gc)
	pauses := family{name: "go_gc_duration_seconds", help: "Stop-the-world pauses of the collector, seconds.", kind: kindSummary}
	for i, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		pauses.samples = append(pauses.samples, sample{labels: []label{{"quantile", q}}, value: gc.PauseQuantiles[i].Seconds()})
	}
	pauses.samples = append(pauses.samples,
		sample{suffix: "_sum", value: gc.PauseTotal.Seconds()},
		sample{suffix: "_count", value: float64(gc.NumGC)})
	var lastGC float64
	if !gc.LastGC.IsZero() {
		lastGC = float64(gc.LastGC.UnixNano()) / 1e9
	}
	threads, _ := runtime.ThreadCreateProfile(nil)
	return append(out, pauses,
		family{name: "go_memstats_last_gc_time_seconds", help: "When the last collection ended, seconds since 1970 (0: none yet).", kind: kindGauge, samples: []sample{{value: lastGC}}},
		family{name: "go_goroutines", help: "Goroutines that exist now.", kind: kindGauge, samples: []sample{{value: float64(runtime.NumGoroutine())}}},
		family{name: "go_threads", help: "Threads the runtime created.", kind: kindGauge, samples: []sample{{value: float64(threads)}}},
		family{name: "go_info", help: "The Go version the binary was built with.", kind: kindGauge, samples: []sample{{labels: []label{{"version", runtime.Version()}}, value: 1}}},
	)
}
