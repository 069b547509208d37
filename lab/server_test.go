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
	resp, err := http.Get(in.base + "hello.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hello" {
		t.Fatalf("peer served %q", b)
	}
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
	if in.peak(usage{}) < at {
		t.Fatalf("peak %d below the kill point %d", in.peak(usage{}), at)
	}
}
