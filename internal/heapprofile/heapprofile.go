// Package heapprofile keeps the runtime's memory profiler off until
// something will read it.
//
// A binary that links runtime/pprof (largo serves it on the admin
// listener) samples one allocation in every 512 KiB from its first
// instruction: each sample unwinds the allocating stack through the
// runtime's function tables, whose pages then stay resident. In a server
// that nobody profiles that is memory for nothing. (Each processor still
// takes one sample, at its first allocation after the switch: the
// runtime samples when the rate changes.)
//
// The switch has to happen before the package initialisers allocate, which
// is before main runs: this package imports only the runtime, so it is
// among the first initialised (packages are initialised in the order of
// their import paths as soon as what they import is), and its one
// package-level variable turns the profiler off as it is initialised. This
// is the one package of largo with state set at initialisation, and the
// reason is that nothing later is early enough. A rate the process was
// started with (GODEBUG=memprofilerate=N), other than the runtime's
// default, is left as it is.
//
// On turns the profiler back on, at the rate the runtime would have used;
// the heap profile then covers the allocations made from that moment.
package heapprofile

import "runtime"

// defaultRate is the runtime's own default sampling interval, in bytes
// (runtime.MemProfileRate's initial value).
const defaultRate = 512 * 1024

// startRate is the rate the process started with, as the runtime set it: the
// runtime's default, a GODEBUG setting, or zero when the linker turned the
// profiler off because nothing can read it.
var startRate = off()

// off turns the profiler off unless the process was started with a rate of
// its own, and returns the rate it found.
func off() int {
	r := runtime.MemProfileRate
	if r == defaultRate {
		runtime.MemProfileRate = 0
	}
	return r
}

// On turns the memory profiler back on at the rate the process started
// with: allocations from now on are sampled. Call it as early as possible,
// before the work whose allocations should be in the profile.
func On() {
	runtime.MemProfileRate = startRate
}

// Sampling reports whether allocations are being sampled now.
func Sampling() bool { return runtime.MemProfileRate > 0 }
