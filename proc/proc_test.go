package proc

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"largo/internal/poll"
)

func TestParseStatus(t *testing.T) {
	in := "Name:\tlargo\nVmPeak:\t  100 kB\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\nThreads:\t5\n"
	m, err := parseStatus([]byte(in))
	if err != nil || m.RSS != 1024<<10 || m.Peak != 2048<<10 {
		t.Fatalf("parseStatus = %+v, %v", m, err)
	}
	for _, bad := range []string{"Name:\tx\n", "VmRSS:\t12 MB\nVmHWM:\t1 kB\n", "VmRSS:\tx kB\nVmHWM:\t1 kB\n"} {
		if _, err := parseStatus([]byte(bad)); err == nil {
			t.Errorf("parseStatus(%q) accepted", bad)
		}
	}
}

func TestPeakBetween(t *testing.T) {
	const M = 1 << 20
	for _, tt := range []struct {
		name     string
		from, to Memory
		sampled  int64
		want     int64
	}{
		{"start-up peak not passed: the samples", Memory{RSS: 20 * M, Peak: 30 * M}, Memory{RSS: 21 * M, Peak: 30 * M}, 25 * M, 25 * M},
		{"start-up peak passed: VmHWM", Memory{RSS: 20 * M, Peak: 30 * M}, Memory{RSS: 21 * M, Peak: 40 * M}, 35 * M, 40 * M},
		{"no samples: the readings", Memory{RSS: 20 * M, Peak: 30 * M}, Memory{RSS: 22 * M, Peak: 30 * M}, 0, 22 * M},
		{"VmHWM read lower later", Memory{RSS: 20 * M, Peak: 22 * M}, Memory{RSS: 19 * M, Peak: 21 * M}, 0, 20 * M},
		{"a dead process reads zero", Memory{RSS: 20 * M, Peak: 30 * M}, Memory{}, 24 * M, 24 * M},
	} {
		if got := PeakBetween(tt.from, tt.to, tt.sampled); got != tt.want {
			t.Errorf("%s: %d MiB; want %d MiB", tt.name, got/M, tt.want/M)
		}
	}
}

func TestSelf(t *testing.T) {
	pid := os.Getpid()
	m, err := ReadMemory(pid)
	if err != nil || m.RSS <= 0 || m.Peak < m.RSS {
		t.Fatalf("ReadMemory = %+v, %v", m, err)
	}
	f, err := os.Open("proc_test.go")
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	n, err := FDsTo(pid, abs)
	f.Close()
	if err != nil || n != 1 {
		t.Fatalf("FDsTo = %d, %v", n, err)
	}
	if _, err := ReadIO(pid); err != nil {
		t.Fatal(err)
	}
	if c, err := CountFDs(pid); err != nil || c < 3 {
		t.Fatalf("CountFDs = %d, %v", c, err)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if n, err := MaxOpenFiles(pid); err != nil || uint64(n) != lim.Cur {
		t.Fatalf("MaxOpenFiles = %d, %v; want %d", n, err, lim.Cur)
	}
}

// TestTree starts a shell with two sleeping children and sums its tree.
func TestTree(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	var pids []int
	poll.Until(5*time.Second, 20*time.Millisecond, func() bool { pids, _ = Tree(pid); return len(pids) == 3 })
	if len(pids) != 3 || pids[0] != pid {
		t.Fatalf("Tree(%d) = %v; want the shell and two children", pid, pids)
	}
	sum, err := TreeMemory(pid)
	if err != nil {
		t.Fatal(err)
	}
	one, _ := ReadMemory(pid)
	if sum.RSS <= one.RSS {
		t.Fatalf("tree RSS %d not above the shell's own %d", sum.RSS, one.RSS)
	}
	if _, err := Tree(1 << 30); err == nil {
		t.Fatal("Tree of a missing process succeeded")
	}
}

// TestTreeSums starts a shell whose two children each hold the test file
// open, and checks that the tree sums count them all.
func TestTreeSums(t *testing.T) {
	abs, err := filepath.Abs("proc_test.go")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `sleep 30 < "$1" & sleep 30 < "$1" & wait`, "sh", abs)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
	pid := cmd.Process.Pid
	var n int
	waitUntil(func() bool { n, _ = TreeFDsTo(pid, abs); return n == 2 })
	if n != 2 {
		t.Fatalf("TreeFDsTo = %d; want the two children's stdin", n)
	}
	own, _ := CountFDs(pid)
	all, err := TreeFDs(pid)
	if err != nil || all < own+2*3 {
		t.Fatalf("TreeFDs = %d, %v; the shell alone has %d", all, err, own)
	}
	if _, err := TreeCPU(pid); err != nil {
		t.Fatal(err)
	}
	io, err := TreeIO(pid)
	if err != nil || io.RChar <= 0 {
		t.Fatalf("TreeIO = %+v, %v", io, err)
	}
	if _, err := TreeFDs(1 << 30); err == nil {
		t.Fatal("TreeFDs of a missing process succeeded")
	}
}

// TestTreeCPU burns CPU in a child and sees it counted in the tree.
func TestTreeCPU(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sh -c 'while :; do :; done' & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
	pid := cmd.Process.Pid
	var cpu time.Duration
	waitUntil(func() bool { cpu, _ = TreeCPU(pid); return cpu >= 50*time.Millisecond })
	own, _ := ReadStat(pid)
	if cpu < 50*time.Millisecond || own.CPU >= cpu {
		t.Fatalf("tree CPU %v, shell's own %v: the busy child is not counted", cpu, own.CPU)
	}
}

func TestTCPConnsTo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	conns := func() []TCPConn {
		c, err := TCPConnsTo(os.Getpid(), port)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := conns(); len(c) != 0 {
		t.Fatalf("%v before dialling", c)
	}
	var clients, servers []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		s, _ := ln.Accept() // its local port is the listener's: not counted
		servers = append(servers, s)
		defer s.Close()
	}
	c := conns()
	if len(c) != 3 || !c[0].Idle() || !c[1].Idle() || !c[2].Idle() {
		t.Fatalf("%+v; want 3 idle connections", c)
	}
	// Unread bytes, then a peer that closed: not idle.
	servers[0].Write([]byte("unread"))
	servers[1].Close()
	if !waitUntil(func() bool {
		n := 0
		for _, c := range conns() {
			if !c.Idle() {
				n++
			}
		}
		return n == 2
	}) {
		t.Fatalf("%+v; want 2 busy connections", conns())
	}
	for _, c := range clients {
		c.Close()
	}
	if c := conns(); len(c) != 0 {
		t.Fatalf("%+v after closing; want none", c)
	}
}

func waitUntil(cond func() bool) bool {
	return poll.Until(5*time.Second, 10*time.Millisecond, cond)
}
