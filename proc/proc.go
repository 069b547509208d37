// Package proc reads, from outside, what a running process costs: resident
// memory now and at its peak, open descriptors, bytes read, CPU time and
// the TCP connections it holds to a given port (a store, say),
// from Linux's /proc. It is how largo's tests and its lab measure servers,
// largo or not, without trusting the server's own account (a Go heap figure
// hides buffers; RSS does not).
//
// Readers take a PID and return an error when the process is gone or the
// figure cannot be read; Tree sums a figure over a process and all its
// descendants, for servers that fork workers.
//
// Most files are parsed by github.com/prometheus/procfs (stat, io,
// limits, the descriptors, meminfo, and /proc itself for the tree), but
// two are parsed here:
//   - /proc/PID/status, read by ReadMemory, is the lab's hot path: read
//     every 50 ms for every process of a server's tree. procfs parses each
//     of its fifty-odd lines, Cpus_allowed_list and capabilities included,
//     where ReadMemory looks for two: 122 allocations a read against 14,
//     for the same time (BenchmarkReadMemory). procfs also reads a status
//     without VmRSS (a zombie, a kernel thread) as no memory at all, which
//     ReadMemory reports as an error.
//   - /proc/PID/net/tcp and tcp6, read by TCPConnsTo: procfs reads only
//     /proc/net/tcp, the reader's own namespace, and has deprecated even
//     that in favour of netlink's socket diagnostics.
package proc

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"
)

// Root is where the proc file system is mounted.
const Root = "/proc"

// open returns pid's entry of Root, or an error if there is none.
func open(pid int) (procfs.Proc, error) {
	fs, err := procfs.NewFS(Root)
	if err != nil {
		return procfs.Proc{}, err
	}
	return fs.Proc(pid)
}

// Memory is a process's resident memory, in bytes.
type Memory struct {
	RSS  int64 // VmRSS: resident now
	Peak int64 // VmHWM: the highest RSS since the process started
}

// PeakBetween returns the highest resident memory of one process between
// two readings of its Memory, from and to, given sampled, the highest RSS
// read in between (0 if none). VmHWM counts from the process's start,
// start-up included, so it is used only when it rose between the readings:
// the process then reached it in between, and it is exact. Otherwise the
// answer is the highest of sampled and the two readings' RSS, which misses
// a rise and fall shorter than the sampling period.
func PeakBetween(from, to Memory, sampled int64) int64 {
	peak := max(from.RSS, to.RSS, sampled)
	if to.Peak > from.Peak {
		peak = max(peak, to.Peak)
	}
	return peak
}

// ReadMemory reads VmRSS and VmHWM from /proc/PID/status.
func ReadMemory(pid int) (Memory, error) {
	b, err := os.ReadFile(filepath.Join(Root, strconv.Itoa(pid), "status"))
	if err != nil {
		return Memory{}, err
	}
	return parseStatus(b)
}

func parseStatus(b []byte) (Memory, error) {
	var m Memory
	var seen int
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		key, val, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		var dst *int64
		switch string(key) {
		case "VmRSS":
			dst = &m.RSS
		case "VmHWM":
			dst = &m.Peak
		default:
			continue
		}
		f := strings.Fields(string(val))
		if len(f) != 2 || f[1] != "kB" {
			return Memory{}, fmt.Errorf("proc: status: bad %s line %q", key, line)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("proc: status: %s: %v", key, err)
		}
		*dst = n << 10
		seen++
	}
	if seen != 2 {
		return Memory{}, fmt.Errorf("proc: status: VmRSS or VmHWM missing (a zombie?)")
	}
	return m, nil
}

// IO is what a process read and wrote, in bytes, as /proc/PID/io counts
// it. RChar counts every byte passed to read-like system calls, sendfile
// included, whether or not it came from the disk's cache.
type IO struct {
	RChar, WChar int64
	ReadBytes    int64 // bytes fetched from storage
	WriteBytes   int64 // bytes sent to storage
}

// ReadIO reads /proc/PID/io. Reading another user's process needs the
// right to trace it.
func ReadIO(pid int) (IO, error) {
	p, err := open(pid)
	if err != nil {
		return IO{}, err
	}
	io, err := p.IO()
	if err != nil {
		return IO{}, fmt.Errorf("proc: io: %w", err)
	}
	return IO{RChar: int64(io.RChar), WChar: int64(io.WChar), ReadBytes: int64(io.ReadBytes), WriteBytes: int64(io.WriteBytes)}, nil
}

// MaxOpenFiles returns the soft limit of pid's open descriptors, from
// /proc/PID/limits; -1 means unlimited.
func MaxOpenFiles(pid int) (int64, error) {
	p, err := open(pid)
	if err != nil {
		return 0, err
	}
	lim, err := p.Limits()
	if err != nil {
		return 0, fmt.Errorf("proc: limits: %w", err)
	}
	if lim.OpenFiles > math.MaxInt64 { // procfs's unlimited is the largest uint64
		return -1, nil
	}
	return int64(lim.OpenFiles), nil
}

// CountFDs returns the number of open descriptors of pid: on Linux 6.2
// and later the size of /proc/PID/fd, without listing it.
func CountFDs(pid int) (int, error) {
	p, err := open(pid)
	if err != nil {
		return 0, err
	}
	return p.FileDescriptorsLen()
}

// FDsTo returns how many descriptors of pid are open on path.
func FDsTo(pid int, path string) (int, error) {
	p, err := open(pid)
	if err != nil {
		return 0, err
	}
	targets, err := p.FileDescriptorTargets()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, target := range targets {
		if target == path {
			n++
		}
	}
	return n, nil
}

// clockTicks is USER_HZ, the unit of CPU times in /proc/PID/stat. It is 100
// on every Linux architecture largo builds for.
const clockTicks = 100

// Stat is what /proc/PID/stat says of a process that matters here.
type Stat struct {
	PPID int
	CPU  time.Duration // user and system time
}

// ReadStat reads /proc/PID/stat.
func ReadStat(pid int) (Stat, error) {
	p, err := open(pid)
	if err != nil {
		return Stat{}, err
	}
	st, err := p.Stat()
	if err != nil {
		return Stat{}, fmt.Errorf("proc: stat: %w", err)
	}
	return Stat{PPID: st.PPID, CPU: time.Duration(st.UTime+st.STime) * time.Second / clockTicks}, nil
}

// children reads the parent of every process once, and returns the
// children of each.
func children(fs procfs.FS) (map[int][]int, error) {
	procs, err := fs.AllProcs()
	if err != nil {
		return nil, err
	}
	kids := map[int][]int{}
	for _, p := range procs {
		if st, err := p.Stat(); err == nil { // else it ended meanwhile
			kids[st.PPID] = append(kids[st.PPID], p.PID)
		}
	}
	return kids, nil
}

// Children returns the PIDs of the processes whose parent is pid.
func Children(pid int) ([]int, error) {
	fs, err := procfs.NewFS(Root)
	if err != nil {
		return nil, err
	}
	kids, err := children(fs)
	if err != nil {
		return nil, err
	}
	return kids[pid], nil
}

// Tree returns pid and all its descendants, pid first, each after its
// parent. It reads /proc once, whatever the depth of the tree.
func Tree(pid int) ([]int, error) {
	fs, err := procfs.NewFS(Root)
	if err != nil {
		return nil, err
	}
	if _, err := fs.Proc(pid); err != nil {
		return nil, err
	}
	kids, err := children(fs)
	if err != nil {
		return nil, err
	}
	all := []int{pid}
	for i := 0; i < len(all); i++ {
		for _, k := range kids[all[i]] {
			// Parents are read one by one, not at one instant: a PID
			// reused meanwhile must not loop.
			if !slices.Contains(all, k) {
				all = append(all, k)
			}
		}
	}
	return all, nil
}

// Sum adds a figure over processes, skipping those that ended meanwhile;
// it fails only if none could be read.
func Sum[T any](pids []int, read func(int) (T, error), add func(a, b T) T) (T, error) {
	var total T
	var firstErr error
	ok := false
	for _, p := range pids {
		v, err := read(p)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		total, ok = add(total, v), true
	}
	if !ok {
		return total, firstErr
	}
	return total, nil
}

// TreeMemory sums Memory over pid and its descendants. The sum of peaks
// is an upper bound of the tree's peak: the processes may not have peaked
// together.
func TreeMemory(pid int) (Memory, error) {
	pids, err := Tree(pid)
	if err != nil {
		return Memory{}, err
	}
	return Sum(pids, ReadMemory, func(a, b Memory) Memory { return Memory{a.RSS + b.RSS, a.Peak + b.Peak} })
}

// TreeCPU sums the CPU time of pid and its descendants. Descendants that
// ended earlier are not counted unless their parent waited for them.
func TreeCPU(pid int) (time.Duration, error) {
	pids, err := Tree(pid)
	if err != nil {
		return 0, err
	}
	return Sum(pids, func(p int) (time.Duration, error) {
		st, err := ReadStat(p)
		return st.CPU, err
	}, func(a, b time.Duration) time.Duration { return a + b })
}

// TreeIO sums IO over pid and its descendants.
func TreeIO(pid int) (IO, error) {
	pids, err := Tree(pid)
	if err != nil {
		return IO{}, err
	}
	return Sum(pids, ReadIO, func(a, b IO) IO {
		return IO{a.RChar + b.RChar, a.WChar + b.WChar, a.ReadBytes + b.ReadBytes, a.WriteBytes + b.WriteBytes}
	})
}

// TreeFDs sums the open descriptors of pid and its descendants.
func TreeFDs(pid int) (int, error) {
	pids, err := Tree(pid)
	if err != nil {
		return 0, err
	}
	return Sum(pids, CountFDs, func(a, b int) int { return a + b })
}

// TreeFDsTo sums, over pid and its descendants, the descriptors open on
// path.
func TreeFDsTo(pid int, path string) (int, error) {
	pids, err := Tree(pid)
	if err != nil {
		return 0, err
	}
	return Sum(pids, func(p int) (int, error) { return FDsTo(p, path) }, func(a, b int) int { return a + b })
}

// MemTotal returns the machine's memory, MemTotal in /proc/meminfo, in
// bytes.
func MemTotal() (int64, error) {
	fs, err := procfs.NewFS(Root)
	if err != nil {
		return 0, err
	}
	mi, err := fs.Meminfo()
	if err != nil {
		return 0, fmt.Errorf("proc: meminfo: %w", err)
	}
	if mi.MemTotalBytes == nil || *mi.MemTotalBytes == 0 {
		return 0, errors.New("proc: meminfo: no MemTotal")
	}
	return int64(*mi.MemTotalBytes), nil
}
