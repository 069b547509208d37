package lab

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"largo/internal/poll"
	"largo/internal/testenv"
)

// TestStartPeer starts a peer from a command template on a port the lab
// picks, reads its figures, and stops its whole process group.
func TestStartPeer(t *testing.T) {
	r := testRunner(t, 0)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello"), 0o644)
	srv := roleServer("stand-in", "serve")
	srv.Files = map[string]string{"note.txt": "serving {dir} on {port}"}
	in, err := r.start(context.Background(), srv, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	checkHello(t, in)
	note, err := os.ReadFile(filepath.Join(in.tmp, "note.txt"))
	if err != nil || !strings.Contains(string(note), dir) || !strings.HasSuffix(string(note), in.addr[strings.LastIndex(in.addr, ":")+1:]) {
		t.Fatalf("file written before the start: %q, %v", note, err)
	}
	u := in.usage()
	if u.rss <= 0 || u.hwm < u.rss || u.fds < 3 || u.rchar <= 0 {
		t.Fatalf("usage of a running server: %+v", u)
	}
	if in.failure() != nil {
		t.Fatalf("failure of a running server: %v", in.failure())
	}
	tmp, pid := in.tmp, in.pid
	in.stop()
	if syscall.Kill(pid, 0) == nil {
		t.Error("server still running after stop")
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Error("scratch folder left behind")
	}
}

// TestStartAnnounced starts a server that picks its own port and learns
// the port from the server's ready line.
func TestStartAnnounced(t *testing.T) {
	r := testRunner(t, 0)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello"), 0o644)
	srv := roleServer("announcer", "serve")
	srv.PrintsURL = true
	in, err := r.start(context.Background(), srv, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer in.stop()
	if !strings.HasPrefix(in.addr, "127.0.0.1:") || strings.HasSuffix(in.addr, ":0") {
		t.Fatalf("address %q", in.addr)
	}
	checkHello(t, in)
}

// checkHello checks that in serves hello.txt, "hello".
func checkHello(t *testing.T, in *instance) {
	t.Helper()
	resp, err := http.Get(in.base + "hello.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hello" {
		t.Fatalf("%s served %q", in.name, b)
	}
}

func TestStartFailures(t *testing.T) {
	r := testRunner(t, 0)
	for _, tt := range []struct {
		cmd, want string
	}{
		{"echo no such option >&2; exit 2", "exited before serving: no such option"},
		{"exit 3", "exited before serving: exit status 3"},
	} {
		_, err := r.start(context.Background(), Server{Name: "bad", Command: tt.cmd}, t.TempDir(), false)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%q: %v; want %q", tt.cmd, err, tt.want)
		}
	}
	// A server that dies while measured is reported as crashed.
	in, err := r.start(context.Background(), roleServer("stand-in", "serve"), t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer in.stop()
	syscall.Kill(in.pid, syscall.SIGSEGV)
	<-in.done
	if err := in.failure(); err == nil || !strings.Contains(err.Error(), "crashed") {
		t.Fatalf("failure after a crash: %v", err)
	}
}

// TestMemoryGuard lets a process grow until the guard kills it.
func TestMemoryGuard(t *testing.T) {
	const guard = 96 << 20
	r := testRunner(t, guard)
	srv := Server{Name: "hog", Command: "LAB_ROLE=alloc exec {exe}", PrintsURL: true}
	_, err := r.start(context.Background(), srv, t.TempDir(), false)
	if err == nil || !strings.HasPrefix(err.Error(), "killed by the guard at ") {
		t.Fatalf("start of a hog: %v", err)
	}
	// Started by hand, to keep the instance after the kill.
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "LAB_ROLE=alloc")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	in := &instance{pid: cmd.Process.Pid, done: make(chan struct{}), stderr: &tailBuffer{max: 100}}
	killed := make(chan struct{})
	in.guard = startSampler(in.pid, guard, func() { in.kill(); close(killed) })
	defer in.guard.stop()
	select {
	case <-killed:
	case <-time.After(30 * time.Second):
		t.Fatal("the guard did not kill a growing process")
	}
	cmd.Wait()
	at := in.guard.killedAt()
	if at <= guard || at > guard+256<<20 {
		t.Fatalf("killed at %d MiB; guard %d MiB", at>>20, guard>>20)
	}
	if err := in.failure(); err == nil || err.Error() != "killed by the guard at "+strconv.Itoa(int(at>>20))+" MiB" {
		t.Fatalf("failure: %v", err)
	}
	if in.peak(usage{}, usage{}) < at {
		t.Fatalf("peak %d below the kill point %d", in.peak(usage{}, usage{}), at)
	}
}

// TestWarmUp checks the warm-up request against a server that has the
// file and one that does not.
func TestWarmUp(t *testing.T) {
	r := testRunner(t, 0)
	dir := t.TempDir()
	f, err := writeWarmUp(dir)
	if err != nil {
		t.Fatal(err)
	}
	in, err := r.start(context.Background(), roleServer("stand-in", "serve"), dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer in.stop()
	if err := in.warmUp(f); err != nil {
		t.Fatal(err)
	}
	missing := f
	missing.name = "nothing.bin"
	if err := in.warmUp(missing); err == nil || !strings.Contains(err.Error(), "answered 404") {
		t.Fatalf("warm-up of a missing file: %v", err)
	}
}

// TestPeakFromIdle runs a server that held 64 MiB at start-up and let it
// go: its VmHWM holds them, the peak that begin and end report must not.
func TestPeakFromIdle(t *testing.T) {
	r := testRunner(t, 0)
	dir := t.TempDir()
	f, err := writeWarmUp(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.data = &dataSet{dir: dir, warmUp: f}
	var res Result
	in, idle := r.begin(context.Background(), roleServer("stand-in", "startup-peak"), dir, false, &res)
	if in == nil {
		t.Fatal(res.Outcome)
	}
	if idle.hwm < idle.rss+startupPeak/2 {
		testenv.Missing(t, "the start-up peak did not show in VmHWM (%d MiB, RSS %d MiB): this kernel or Go runtime keeps freed memory resident (GODEBUG=madvdontneed=0?), so the test cannot tell a start-up peak from a later one", idle.hwm>>20, idle.rss>>20)
	}
	poll.Wait(t, 10*time.Second, "a sample since the server was idle", func() bool { return in.guard.sampledPeak() > 0 })
	r.end(in, idle, &res, 0)
	if res.Outcome != "" {
		t.Fatal(res.Outcome)
	}
	if above := res.Values[keyAbove]; above > 8 || above < 0 {
		t.Fatalf("peak %.1f MiB above idle (VmHWM %d MiB, idle %d MiB); want the idle server's, near 0",
			above, idle.hwm>>20, idle.rss>>20)
	}
}

// TestPeak checks which figures make the peak: the samples since the
// rebase, and VmHWM only for one process that passed its value at idle.
func TestPeak(t *testing.T) {
	const M = 1 << 20
	idle1 := usage{procs: 1, rss: 20 * M, hwm: 60 * M}
	idle2 := usage{procs: 2, rss: 20 * M, hwm: 60 * M}
	for _, tt := range []struct {
		name      string
		idle, end usage
		sampled   int64
		want      int64
	}{
		{"start-up peak kept out", idle1, usage{procs: 1, rss: 21 * M, hwm: 60 * M}, 30 * M, 30 * M},
		{"passed the start-up peak", idle1, usage{procs: 1, rss: 21 * M, hwm: 90 * M}, 80 * M, 90 * M},
		{"a tree: samples only", idle2, usage{procs: 2, rss: 21 * M, hwm: 90 * M}, 80 * M, 80 * M},
		{"no sample: the readings", idle2, usage{procs: 2, rss: 22 * M, hwm: 60 * M}, 0, 22 * M},
	} {
		in := &instance{guard: &sampler{}}
		in.guard.peak = tt.sampled
		if got := in.peak(tt.idle, tt.end); got != tt.want {
			t.Errorf("%s: %d MiB; want %d MiB", tt.name, got/M, tt.want/M)
		}
	}
}

// TestRebase checks that a sampler forgets what it sampled before a
// rebase, and only that.
func TestRebase(t *testing.T) {
	pid := os.Getpid()
	s := &sampler{pid: pid, pids: []int{pid}}
	if rss := s.sample(); rss <= 0 || s.sampledPeak() != rss {
		t.Fatalf("sampled %d, peak %d", rss, s.sampledPeak())
	}
	s.rebase()
	if p := s.sampledPeak(); p != 0 {
		t.Fatalf("peak %d after a rebase", p)
	}
	if rss := s.sample(); rss <= 0 || s.sampledPeak() != rss {
		t.Fatalf("after a rebase: sampled %d, peak %d", rss, s.sampledPeak())
	}
}
