package proc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests below read a process whose figures they control: the test
// binary itself, started again as a child that takes commands, one line
// at a time on its standard input, and answers each with one line on its
// standard output once done. Between commands it does nothing, so its
// figures stand still while they are read.

// childEnv, set to 1, makes the test binary the child instead of running
// the tests.
const childEnv = "LARGO_PROC_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(runChild(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// runChild serves commands:
//
//	open N PATH   open PATH N more times, and keep it open
//	read N        read N bytes (from /dev/zero)
//	write N       write N bytes (to /dev/null)
//	touch N       allocate N MiB and write to each of its pages
//	drop          free what touch allocated, and give it back to the system
//	burn MS       run on the CPU until its own CPU time rose by MS ms
//	cpu           answer its CPU time, user and system, in nanoseconds
//	name S        call itself S (its comm, in /proc/PID/stat)
//	limit N       set its soft limit of open descriptors to N
//	spawn         start another child, wait until it takes commands, and
//	              answer its PID
//
// Every answer but cpu's and spawn's is "ok"; a command that fails ends
// the child with status 1.
func runChild(in io.Reader, out io.Writer) int {
	zero, err1 := os.Open("/dev/zero")
	null, err2 := os.OpenFile("/dev/null", os.O_WRONLY, 0)
	if err1 != nil || err2 != nil {
		return 1
	}
	var kept []*os.File
	var touched []byte
	var kids []*exec.Cmd
	r := bufio.NewReader(in)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			for _, f := range kept {
				f.Close()
			}
			for _, k := range kids {
				k.Process.Kill()
				k.Wait()
			}
			return 0
		}
		cmd, arg, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		n, _ := strconv.Atoi(strings.Fields(arg + " x")[0])
		answer := "ok"
		switch cmd {
		case "open":
			_, path, _ := strings.Cut(arg, " ")
			for range n {
				f, err := os.Open(path)
				if err != nil {
					return 1
				}
				kept = append(kept, f)
			}
		case "read":
			if _, err := io.ReadFull(zero, make([]byte, n)); err != nil {
				return 1
			}
		case "write":
			if _, err := null.Write(make([]byte, n)); err != nil {
				return 1
			}
		case "touch":
			touched = make([]byte, n<<20)
			for i := 0; i < len(touched); i += os.Getpagesize() {
				touched[i] = 1
			}
		case "drop":
			touched = nil
			runtime.GC()
			debug.FreeOSMemory()
		case "burn":
			until := cpuTime() + time.Duration(n)*time.Millisecond
			for x := 0; cpuTime() < until; x++ {
				for range 1 << 16 {
					x++
				}
			}
		case "cpu":
			answer = strconv.FormatInt(int64(cpuTime()), 10)
		case "name":
			if os.WriteFile("/proc/self/comm", []byte(arg), 0) != nil {
				return 1
			}
		case "limit":
			var lim syscall.Rlimit
			if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
				return 1
			}
			lim.Cur = uint64(n)
			if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
				return 1
			}
		case "spawn":
			k := exec.Command(os.Args[0])
			k.Env = append(os.Environ(), childEnv+"=1")
			kin, err1 := k.StdinPipe()
			kout, err2 := k.StdoutPipe()
			if err1 != nil || err2 != nil || k.Start() != nil {
				return 1
			}
			kids = append(kids, k)
			// Once it answers, it has started and waits for commands.
			io.WriteString(kin, "cpu\n")
			if _, err := bufio.NewReader(kout).ReadString('\n'); err != nil {
				return 1
			}
			answer = strconv.Itoa(k.Process.Pid)
		default:
			return 1
		}
		if _, err := fmt.Fprintln(out, answer); err != nil {
			return 1
		}
	}
}

// cpuTime returns the calling process's CPU time, user and system, as
// getrusage counts it.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// child is a running child and the pipes that command it.
type child struct {
	pid int
	in  io.Writer
	out *bufio.Reader
}

// startChild starts a child, stopped and waited for when t ends.
func startChild(t testing.TB) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("child: %v", err)
		}
	})
	c := &child{pid: cmd.Process.Pid, in: in, out: bufio.NewReader(out)}
	c.do(t, "cpu") // once it answers, it has started and waits for commands
	return c
}

// do sends the child one command and returns its answer.
func (c *child) do(t testing.TB, command string) string {
	t.Helper()
	if _, err := io.WriteString(c.in, command+"\n"); err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	answer, err := c.out.ReadString('\n')
	if err != nil {
		t.Fatalf("%s: the child failed: %v", command, err)
	}
	return strings.TrimSuffix(answer, "\n")
}

// TestChildIO: the bytes a child reads and writes, its commands and
// answers included, are its RChar and WChar to the byte.
func TestChildIO(t *testing.T) {
	c := startChild(t)
	c.do(t, "read 1") // the first read of /dev/zero
	io0, err := ReadIO(c.pid)
	if err != nil {
		t.Fatal(err)
	}
	const readCmd, writeCmd = "read 1000000", "write 300000"
	c.do(t, readCmd)
	c.do(t, writeCmd)
	io1, err := ReadIO(c.pid)
	if err != nil {
		t.Fatal(err)
	}
	answers := 2 * len("ok\n")
	if got, want := io1.RChar-io0.RChar, int64(len(readCmd)+1+1000000+len(writeCmd)+1); got != want {
		t.Errorf("RChar rose by %d; want %d", got, want)
	}
	if got, want := io1.WChar-io0.WChar, int64(300000+answers); got != want {
		t.Errorf("WChar rose by %d; want %d", got, want)
	}
}

// TestChildFDs: a child's descriptors, counted and by path, as it opens
// more.
func TestChildFDs(t *testing.T) {
	c := startChild(t)
	path := filepath.Join(t.TempDir(), "held")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	n0, err := CountFDs(c.pid)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := FDsTo(c.pid, path); err != nil || n != 0 {
		t.Fatalf("FDsTo before = %d, %v; want 0", n, err)
	}
	c.do(t, "open 7 "+path)
	if n, err := CountFDs(c.pid); err != nil || n != n0+7 {
		t.Errorf("CountFDs = %d, %v; want %d", n, err, n0+7)
	}
	if n, err := FDsTo(c.pid, path); err != nil || n != 7 {
		t.Errorf("FDsTo = %d, %v; want 7", n, err)
	}
	c.do(t, "limit 321")
	if n, err := MaxOpenFiles(c.pid); err != nil || n != 321 {
		t.Errorf("MaxOpenFiles = %d, %v; want 321", n, err)
	}
}

// TestChildMemory: a child that touches 64 MiB is that much more
// resident, and its peak stays once it gives them back.
func TestChildMemory(t *testing.T) {
	c := startChild(t)
	m0, err := ReadMemory(c.pid)
	if err != nil {
		t.Fatal(err)
	}
	c.do(t, "touch 64")
	m1, err := ReadMemory(c.pid)
	if err != nil {
		t.Fatal(err)
	}
	if m1.RSS-m0.RSS < 64<<20 || m1.Peak < m1.RSS {
		t.Errorf("after touching 64 MiB: %+v, before %+v", m1, m0)
	}
	c.do(t, "drop")
	m2, err := ReadMemory(c.pid)
	if err != nil {
		t.Fatal(err)
	}
	if m2.Peak < m1.RSS {
		t.Errorf("VmHWM %d below an RSS read before, %d", m2.Peak, m1.RSS)
	}
	if got := PeakBetween(m0, m2, 0); got != m2.Peak {
		t.Errorf("PeakBetween = %d; want VmHWM, %d, which rose in between", got, m2.Peak)
	}
}

// TestChildCPU: a child's CPU time in /proc/PID/stat lies between its own
// account before and after, less the clock ticks its user and system
// times are each cut to.
func TestChildCPU(t *testing.T) {
	c := startChild(t)
	c.do(t, "name a) (b) c") // the name may hold what ends it
	c.do(t, "burn 200")
	before, _ := strconv.ParseInt(c.do(t, "cpu"), 10, 64)
	st, err := ReadStat(c.pid)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := strconv.ParseInt(c.do(t, "cpu"), 10, 64)
	const tick = time.Second / clockTicks
	if st.CPU <= time.Duration(before)-2*tick || st.CPU > time.Duration(after) || st.CPU < 200*time.Millisecond-2*tick {
		t.Errorf("CPU %v; the child counted %v before, %v after", st.CPU, time.Duration(before), time.Duration(after))
	}
	if st.PPID != os.Getpid() {
		t.Errorf("PPID %d; want %d", st.PPID, os.Getpid())
	}
}

// TestChildTree: a child and the one it starts are a tree, whose sums are
// the sums of their figures.
func TestChildTree(t *testing.T) {
	c := startChild(t)
	kid, _ := strconv.Atoi(c.do(t, "spawn"))
	pids, err := Tree(c.pid)
	if err != nil || !slices.Equal(pids, []int{c.pid, kid}) {
		t.Fatalf("Tree = %v, %v; want %v", pids, err, []int{c.pid, kid})
	}
	if kids, err := Children(c.pid); err != nil || !slices.Equal(kids, []int{kid}) {
		t.Errorf("Children = %v, %v; want [%d]", kids, err, kid)
	}
	st, err := ReadStat(kid)
	if err != nil || st.PPID != c.pid {
		t.Errorf("the grandchild's stat %+v, %v; want PPID %d", st, err, c.pid)
	}
	a, _ := CountFDs(c.pid)
	b, _ := CountFDs(kid)
	if n, err := TreeFDs(c.pid); err != nil || n != a+b {
		t.Errorf("TreeFDs = %d, %v; want %d + %d", n, err, a, b)
	}
	// A peak never falls: the tree's lies between the sums read before
	// and after.
	peaks := func() int64 {
		a, _ := ReadMemory(c.pid)
		b, _ := ReadMemory(kid)
		return a.Peak + b.Peak
	}
	lo := peaks()
	m, err := TreeMemory(c.pid)
	if hi := peaks(); err != nil || m.Peak < lo || m.Peak > hi {
		t.Errorf("TreeMemory = %+v, %v; want a peak between the sums %d and %d", m, err, lo, hi)
	}
	ia, _ := ReadIO(c.pid)
	ib, _ := ReadIO(kid)
	if io, err := TreeIO(c.pid); err != nil || io.RChar != ia.RChar+ib.RChar || io.WChar != ia.WChar+ib.WChar {
		t.Errorf("TreeIO = %+v, %v; want %+v + %+v", io, err, ia, ib)
	}
}

// TestMemTotalSysinfo: MemTotal is the memory sysinfo(2) counts.
func TestMemTotalSysinfo(t *testing.T) {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		t.Fatal(err)
	}
	if n, err := MemTotal(); err != nil || uint64(n) != uint64(si.Totalram)*uint64(si.Unit) {
		t.Errorf("MemTotal = %d, %v; sysinfo says %d", n, err, uint64(si.Totalram)*uint64(si.Unit))
	}
}
