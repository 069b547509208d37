package metrics

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// procRoot is where the proc file system is mounted.
const procRoot = "/proc"

// userHZ is the unit of the CPU times in /proc/PID/stat: clock ticks,
// 100 a second on every Linux architecture Go runs on.
const userHZ = 100

// processFigures is what the process collector exposes, read from procRoot.
type processFigures struct {
	cpuSeconds   float64
	rss, virtual float64
	startTime    float64 // seconds since 1970
	openFDs      float64
	received     float64 // bytes over the network, in and out
	transmitted  float64
	haveNet      bool
}

// process is the process's own figures, under the names the Prometheus
// client's process collector gives them: resident and virtual memory,
// descriptors open and allowed, CPU time, start time, the network's bytes.
// Figures that cannot be read (no proc file system) are left out, and the
// failure counted as a gathering error.
func (r *registry) process() []family {
	p, err := readProcess(procRoot)
	if err != nil {
		r.errors.with("gathering").Inc()
		return nil
	}
	gauge := func(name, help string, v float64) family {
		return family{name: name, help: help, kind: kindGauge, samples: []sample{{value: v}}}
	}
	out := []family{
		{name: "process_cpu_seconds_total", help: "CPU time the process used, user and system, seconds.", kind: kindCounter, samples: []sample{{value: p.cpuSeconds}}},
		gauge("process_resident_memory_bytes", "Resident memory, bytes.", p.rss),
		gauge("process_virtual_memory_bytes", "Virtual memory, bytes.", p.virtual),
		gauge("process_start_time_seconds", "When the process started, seconds since 1970.", p.startTime),
		gauge("process_open_fds", "File descriptors open.", p.openFDs),
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		out = append(out, gauge("process_max_fds", "File descriptors the process may open (the soft limit).", float64(lim.Cur)))
	}
	if syscall.Getrlimit(syscall.RLIMIT_AS, &lim) == nil {
		out = append(out, gauge("process_virtual_memory_max_bytes", "Virtual memory the process may map (the soft limit), bytes.", float64(lim.Cur)))
	}
	if p.haveNet {
		out = append(out,
			family{name: "process_network_receive_bytes_total", help: "Bytes received over the network, as the process's network namespace counts them.", kind: kindCounter, samples: []sample{{value: p.received}}},
			family{name: "process_network_transmit_bytes_total", help: "Bytes sent over the network, as the process's network namespace counts them.", kind: kindCounter, samples: []sample{{value: p.transmitted}}})
	}
	return out
}

// readProcess reads the figures of the calling process under root.
func readProcess(root string) (processFigures, error) {
	var p processFigures
	b, err := os.ReadFile(root + "/self/stat")
	if err != nil {
		return p, err
	}
	// The command's name, in parentheses, may hold spaces and
	// parentheses: the fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return p, errors.New("metrics: no command name in stat")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is the state, the stat file's third field.
	const utime, stime, start, vsize, rss = 11, 12, 19, 20, 21
	if len(f) <= rss {
		return p, errors.New("metrics: stat too short")
	}
	n := func(i int) float64 {
		v, e := strconv.ParseUint(f[i], 10, 64)
		if e != nil && err == nil {
			err = errors.New("metrics: stat: " + e.Error())
		}
		return float64(v)
	}
	p.cpuSeconds = (n(utime) + n(stime)) / userHZ
	p.virtual = n(vsize)
	p.rss = n(rss) * float64(os.Getpagesize())
	startTicks := n(start)
	if err != nil {
		return p, err
	}
	boot, err := bootTime(root)
	if err != nil {
		return p, err
	}
	p.startTime = boot + startTicks/userHZ
	d, err := os.Open(root + "/self/fd")
	if err != nil {
		return p, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return p, err
	}
	p.openFDs = float64(len(names))
	p.received, p.transmitted, p.haveNet = netOctets(root)
	return p, nil
}

// bootTime is when the system started, seconds since 1970 (btime in
// root's stat).
func bootTime(root string) (float64, error) {
	b, err := os.ReadFile(root + "/stat")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, errors.New("metrics: no btime in stat")
}

// netOctets returns the bytes received and sent by the network namespace
// of the process (InOctets and OutOctets of IpExt in net/netstat), and
// whether they could be read.
func netOctets(root string) (in, out float64, ok bool) {
	b, err := os.ReadFile(root + "/self/net/netstat")
	if err != nil {
		return 0, 0, false
	}
	// Each group is two lines: "IpExt: NAME..." then "IpExt: VALUE...".
	lines := strings.Split(string(b), "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(names) == 0 || names[0] != "IpExt:" || len(values) != len(names) {
			continue
		}
		var seen int
		for j, n := range names {
			v, err := strconv.ParseFloat(values[j], 64)
			switch {
			case err != nil:
			case n == "InOctets":
				in, seen = v, seen+1
			case n == "OutOctets":
				out, seen = v, seen+1
			}
		}
		return in, out, seen == 2
	}
	return 0, 0, false
}
