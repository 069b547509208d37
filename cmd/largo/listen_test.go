package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// largoProcess starts this test binary as largo with args, the files
// handed over as descriptors 3 on and LISTEN_FDS, LISTEN_FDNAMES and
// LISTEN_PID set as a service manager sets them: LISTEN_PID is the pid of
// the shell that then execs largo, so it is largo's own.
func largoProcess(t *testing.T, files []*os.File, names string, env []string, args ...string) (*exec.Cmd, *output) {
	t.Helper()
	script := `LISTEN_PID=$$ exec "$@"`
	if len(files) == 0 {
		script = `exec "$@"`
	}
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "sh", os.Args[0]}, args...)...)
	cmd.Env = append(append(os.Environ(), runAsLargo+"=1"), env...)
	if len(files) > 0 {
		cmd.Env = append(cmd.Env, fmt.Sprintf("LISTEN_FDS=%d", len(files)), "LISTEN_FDNAMES="+names)
	}
	cmd.ExtraFiles = files
	f, err := os.CreateTemp(t.TempDir(), "output")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, &output{f.Name()}
}

// output is what a process wrote on its standard output and error.
type output struct{ path string }

func (o *output) String() string {
	b, _ := os.ReadFile(o.path)
	return string(b)
}

// queuedGet connects to addr and sends a GET of path, before anything may
// accept the connection: it waits in the socket's queue.
func queuedGet(t *testing.T, addr, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, addr)
	return c
}

// answer reads the response on c, for at most a minute.
func answer(t *testing.T, c net.Conn, out *output) (int, string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("queued request: %v\nlargo's output:\n%s", err, out)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestSocketActivation hands a listening socket to largo serve as systemd
// does. A connection queued before largo starts is answered; the server
// stops on SIGTERM, and a connection queued while no server runs is
// answered by the next one on the same socket: a restart refuses nobody.
// The health check of the handed-over address passes while it serves and
// fails once it stopped.
func TestSocketActivation(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello, world\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	sock, err := ln.(*net.TCPListener).File()
	ln.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()

	for round := range 2 {
		c := queuedGet(t, addr, "/hello.txt")
		// --listen names a port that is busy: the handed-over socket is
		// used instead of it.
		srv, out := largoProcess(t, []*os.File{sock}, "http", nil, "serve", "--listen", "127.0.0.1:1", dir)
		if code, body := answer(t, c, out); code != http.StatusOK || body != "hello, world\n" {
			t.Fatalf("round %d: queued request answered %d %q", round, code, body)
		}
		hc, hout := largoProcess(t, nil, "", []string{"LARGO_LISTEN=" + addr}, "healthcheck")
		if err := hc.Wait(); err != nil {
			t.Errorf("round %d: healthcheck of a serving largo: %v\n%s", round, err, hout)
		}
		srv.Process.Signal(syscall.SIGTERM)
		if err := srv.Wait(); err != nil {
			t.Fatalf("round %d: largo after SIGTERM: %v\n%s", round, err, out)
		}
		if !strings.Contains(out.String(), addr) {
			t.Errorf("round %d: largo does not name the handed-over address %s:\n%s", round, addr, out)
		}
	}
	hc, hout := largoProcess(t, nil, "", nil, "healthcheck", "--listen", addr)
	err = hc.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitFailed {
		t.Errorf("healthcheck with no server running: %v, want exit %d\n%s", err, exitFailed, hout)
	}
}

// TestSocketActivationRefused hands over a regular file: largo serve exits
// with a usage error naming socket activation, and serves nothing.
func TestSocketActivationRefused(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "not-a-socket")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	srv, out := largoProcess(t, []*os.File{f}, "", nil, "serve", "--listen", "127.0.0.1:0", t.TempDir())
	err = srv.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitUsage || !strings.Contains(out.String(), "socket activation") {
		t.Fatalf("largo serve with a file handed over: %v\n%s", err, out)
	}
}
