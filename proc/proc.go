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
package proc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Root is where the proc file system is mounted.
const Root = "/proc"

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
	b, err := os.ReadFile(filepath.Join(Root, strconv.Itoa(pid), "io"))
	if err != nil {
		return IO{}, err
	}
	return parseIO(b)
}

func parseIO(b []byte) (IO, error) {
	var io IO
	fields := map[string]*int64{"rchar": &io.RChar, "wchar": &io.WChar, "read_bytes": &io.ReadBytes, "write_bytes": &io.WriteBytes}
	seen := 0
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		key, val, ok := bytes.Cut(line, []byte(": "))
		dst := fields[string(key)]
		if !ok || dst == nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(val)), 10, 64)
		if err != nil {
			return IO{}, fmt.Errorf("proc: io: %s: %v", key, err)
		}
		*dst = n
		seen++
	}
	if seen != len(fields) {
		return IO{}, fmt.Errorf("proc: io: %d of %d fields", seen, len(fields))
	}
	return io, nil
}

// MaxOpenFiles returns the soft limit of pid's open descriptors, from
// /proc/PID/limits; -1 means unlimited.
func MaxOpenFiles(pid int) (int64, error) {
	b, err := os.ReadFile(filepath.Join(Root, strconv.Itoa(pid), "limits"))
	if err != nil {
		return 0, err
	}
	return parseMaxOpenFiles(b)
}

func parseMaxOpenFiles(b []byte) (int64, error) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("Max open files"))
		if !ok {
			continue
		}
		fields := strings.Fields(string(rest))
		if len(fields) == 0 {
			break
		}
		if fields[0] == "unlimited" {
			return -1, nil
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("proc: limits: max open files: %v", err)
		}
		return n, nil
	}
	return 0, fmt.Errorf("proc: limits: no max open files")
}

// CountFDs returns the number of open descriptors of pid.
func CountFDs(pid int) (int, error) {
	ents, err := os.ReadDir(filepath.Join(Root, strconv.Itoa(pid), "fd"))
	if err != nil {
		return 0, err
	}
	return len(ents), nil
}

// FDsTo returns how many descriptors of pid are open on path.
func FDsTo(pid int, path string) (int, error) {
	dir := filepath.Join(Root, strconv.Itoa(pid), "fd")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && target == path {
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
	b, err := os.ReadFile(filepath.Join(Root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return Stat{}, err
	}
	return parseStat(b)
}

func parseStat(b []byte) (Stat, error) {
	// The command name, field 2, is in parentheses and may hold spaces and
	// parentheses: the fields that follow start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("proc: stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); ppid is field 4, utime 14, stime 15.
	if len(f) < 13 {
		return Stat{}, fmt.Errorf("proc: stat: %d fields", len(f)+2)
	}
	ppid, err1 := strconv.Atoi(f[1])
	ut, err2 := strconv.ParseInt(f[11], 10, 64)
	st, err3 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return Stat{}, fmt.Errorf("proc: stat: bad numbers")
	}
	return Stat{PPID: ppid, CPU: time.Duration(ut+st) * time.Second / clockTicks}, nil
}

// Children returns the PIDs of the processes whose parent is pid.
func Children(pid int) ([]int, error) {
	ents, err := os.ReadDir(Root)
	if err != nil {
		return nil, err
	}
	var kids []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := ReadStat(p)
		if err == nil && st.PPID == pid {
			kids = append(kids, p)
		}
	}
	return kids, nil
}

// Tree returns pid and all its descendants, pid first.
func Tree(pid int) ([]int, error) {
	if _, err := os.Stat(filepath.Join(Root, strconv.Itoa(pid))); err != nil {
		return nil, err
	}
	all := []int{pid}
	for i := 0; i < len(all); i++ {
		kids, err := Children(all[i])
		if err != nil {
			return nil, err
		}
		all = append(all, kids...)
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
	b, err := os.ReadFile(filepath.Join(Root, "meminfo"))
	if err != nil {
		return 0, err
	}
	return parseMemTotal(b)
}

func parseMemTotal(b []byte) (int64, error) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		val, ok := bytes.CutPrefix(line, []byte("MemTotal:"))
		if !ok {
			continue
		}
		f := strings.Fields(string(val))
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("proc: meminfo: bad MemTotal line %q", line)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("proc: meminfo: bad MemTotal %q", f[0])
		}
		return n << 10, nil
	}
	return 0, fmt.Errorf("proc: meminfo: no MemTotal")
}
