package lab

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"testing"
	"time"

	"largo/internal/ready"
)

// TestMain lets the test binary play the processes the lab measures:
// with LAB_ROLE=serve it is a small file server (DIR PORT; on port 0 it
// prints a line for people and then the ready line, as largo does), with
// LAB_ROLE=timeouts the same with the hostile scenario's timeouts, with
// LAB_ROLE=startup-peak the same after holding 64 MiB at start-up, with
// LAB_ROLE=alloc a process whose memory grows until it is killed.
func TestMain(m *testing.M) {
	switch os.Getenv("LAB_ROLE") {
	case "timeouts":
		// The file server with the hostile scenario's timeouts.
		ln, err := net.Listen("tcp", "127.0.0.1:"+os.Args[len(os.Args)-1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		srv := &http.Server{
			Handler:           http.FileServer(http.Dir(os.Args[len(os.Args)-2])),
			ReadHeaderTimeout: hostileIdle, ReadTimeout: hostileIdle, IdleTimeout: hostileIdle,
		}
		srv.Serve(ln)
		os.Exit(1)
	case "startup-peak":
		touch(make([]byte, startupPeak))
		debug.FreeOSMemory()
		fallthrough
	case "serve":
		ln, err := net.Listen("tcp", "127.0.0.1:"+os.Args[len(os.Args)-1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if os.Args[len(os.Args)-1] == "0" {
			fmt.Printf("stand-in: serving at http://%s/\n", ln.Addr())
			ready.Write(os.Stdout, ready.Line{URL: fmt.Sprintf("http://%s/", ln.Addr()), Addr: ln.Addr().String()})
		}
		http.Serve(ln, http.FileServer(http.Dir(os.Args[len(os.Args)-2])))
		os.Exit(1)
	case "alloc":
		var hold [][]byte
		for range 256 { // at most 2 GiB, should the guard fail
			b := make([]byte, 8<<20)
			touch(b)
			hold = append(hold, b)
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(time.Minute)
		os.Exit(len(hold))
	}
	os.Exit(m.Run())
}

// startupPeak is what the startup-peak role holds before it serves.
const startupPeak = 64 << 20

// touch writes to every page of b, so that it is resident.
func touch(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
}

// roleServer is a Server run by the test binary itself.
func roleServer(name, mode string) Server {
	return Server{Name: name, Command: "LAB_ROLE=" + mode + " exec {exe} {dir} {port}"}
}

// testRunner is a runner whose servers are the test binary.
func testRunner(t *testing.T, guard int64) *runner {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &runner{cfg: Config{Exe: exe, MemoryGuard: guard, Hold: time.Second, Reps: 1, Client: "go"}, progress: os.Stderr}
}
