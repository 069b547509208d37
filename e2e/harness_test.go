//go:build e2e

package e2e

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"largo/internal/poll"
	"largo/internal/ready"
	"largo/internal/testenv"
	"largo/proc"
)

// largoBin is the binary under test, built once by TestMain.
var largoBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "largo-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	largoBin = filepath.Join(dir, "largo")
	build := exec.Command("go", "build", "-o", largoBin, "largo/cmd/largo")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as make build does
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building largo:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// need returns the path of a program the test requires, or skips the test
// (fails it, under LARGO_TEST_STRICT=1) when the program is missing.
func need(t testing.TB, program string) string {
	t.Helper()
	return testenv.Program(t, program)
}

// server is a running largo process.
type server struct {
	t      testing.TB
	cmd    *exec.Cmd
	URL    string // base URL, with a trailing slash
	Addr   string // host:port
	Admin  string // the admin listener's base URL, if any
	S3     string // the S3 API's base URL, if any
	PID    int
	stdout *lockedBuffer
	stderr *lockedBuffer
	done   chan struct{}
	err    error // of Wait, once done is closed
}

// startServer runs `largo serve dir --listen 127.0.0.1:0 args...` and waits
// until it announces that it is ready (package ready). The process is
// killed when the test ends.
func startServer(t testing.TB, dir string, args ...string) *server {
	t.Helper()
	return startLargo(t, append([]string{"serve", dir, "--listen", "127.0.0.1:0"}, args...), nil)
}

// withAdmin adds an admin listener to args, where the metrics are read,
// unless they name one: what the tests of a bucket, which read the
// metrics of several instances, start with.
func withAdmin(args []string) []string {
	for _, a := range args {
		if a == adminListen || strings.HasPrefix(a, adminListen+"=") {
			return args
		}
	}
	return append(args[:len(args):len(args)], adminListen, "127.0.0.1:0")
}

// startLargo runs largo with args and environment additions env, and
// waits for its ready line.
func startLargo(t testing.TB, args []string, env []string) *server {
	t.Helper()
	args = quietDigests(args)
	s := &server{t: t, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(largoBin, args...)
	s.cmd.Env = append(os.Environ(), env...)
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.PID = s.cmd.Process.Pid
	found := make(chan ready.Line, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			s.stdout.Write([]byte(line + "\n"))
			if l, ok := ready.Parse(sc.Bytes()); ok && !sent {
				found <- l
				sent = true
			}
		}
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.done
		if t.Failed() {
			t.Logf("largo stdout:\n%s\nlargo stderr (last 4 KiB):\n%s", s.stdout.String(), tail(s.stderr.String(), 4096))
		}
	})
	select {
	case l := <-found:
		s.URL, s.Addr, s.Admin, s.S3 = l.URL, l.Addr, l.Admin, l.S3
	case <-s.done:
		t.Fatalf("largo exited before serving: %v\n%s", s.err, s.stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("largo announced no readiness in 20s\n%s", s.stderr.String())
	}
	return s
}

// quietDigests turns the background hashing off for a server whose
// args do not set --digest-rate: the tests count what a server reads
// (a download killed and resumed reads the file about once), the
// requests it makes of a bucket and the records it writes, and the
// pass would read every file it finds at start. The tests of the pass
// give the rate.
func quietDigests(args []string) []string {
	if len(args) == 0 || args[0] != "serve" {
		return args
	}
	for _, a := range args {
		if a == "--digest-rate" || strings.HasPrefix(a, "--digest-rate=") {
			return args
		}
	}
	return append(args[:len(args):len(args)], "--digest-rate", "0")
}

// adminListen is the flag of the admin listener, where the metrics are
// read: a server started with adminListen, "127.0.0.1:0" has one.
const adminListen = "--admin-listen"

// metrics asks the server's admin listener for its metrics: they are the
// operator's, and the main listener answers them only to a principal the
// access file names for them.
func (s *server) metrics() *http.Response {
	s.t.Helper()
	if s.Admin == "" {
		s.t.Fatal("reading metrics: start the server with " + adminListen + " 127.0.0.1:0")
	}
	resp := get(s.t, s.Admin+"metrics")
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("metrics on the admin listener: %s", resp.Status)
	}
	return resp
}

// signal sends sig to the server.
func (s *server) signal(sig syscall.Signal) {
	s.t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatal(err)
	}
}

// wait waits for the process to end and returns its exit code.
func (s *server) wait(timeout time.Duration) int {
	s.t.Helper()
	select {
	case <-s.done:
	case <-time.After(timeout):
		s.t.Fatalf("largo still running after %s", timeout)
	}
	return s.cmd.ProcessState.ExitCode()
}

// fds returns the server's open descriptor count.
func (s *server) fds() int {
	s.t.Helper()
	n, err := proc.CountFDs(s.PID)
	if err != nil {
		s.t.Fatal(err)
	}
	return n
}

// idleFDs returns the server's open descriptor count once it has settled
// (the same in three reads 50 ms apart): the baseline of a test that
// checks descriptors come back, taken after the connections before it
// have been closed on the server's side too.
func (s *server) idleFDs() int {
	s.t.Helper()
	n, ok := poll.Steady(10*time.Second, 50*time.Millisecond, 3, s.fds)
	if !ok {
		s.t.Fatalf("the server's descriptors did not settle in 10s (last %d)", n)
	}
	return n
}

// memory returns the server's resident memory.
func (s *server) memory() proc.Memory {
	s.t.Helper()
	m, err := proc.ReadMemory(s.PID)
	if err != nil {
		s.t.Fatal(err)
	}
	return m
}

// idleRSS returns the server's resident memory once it has settled (the
// same in three reads 50 ms apart): the baseline of a benchmark that
// reports growth, read after its warm-up. Memory that never settles (10 s)
// is read as it is last, and said in the log.
func (s *server) idleRSS() int64 {
	s.t.Helper()
	return idleRSSOf(s.t, s.PID)
}

// idleRSSOf is idleRSS of any process: a peer's, in a benchmark that
// measures it beside largo.
func idleRSSOf(t testing.TB, pid int) int64 {
	t.Helper()
	rss, ok := poll.Steady(10*time.Second, 50*time.Millisecond, 3, func() int64 {
		m, err := proc.ReadMemory(pid)
		if err != nil {
			t.Fatal(err)
		}
		return m.RSS
	})
	if !ok {
		t.Logf("the RSS of process %d did not settle in 10s; idle taken as %d KiB", pid, rss>>10)
	}
	return rss
}

// reportMemory reports the server's idle RSS and its peak RSS above idle
// since w started, in MiB: the memory figures of a benchmark.
func reportMemory(b *testing.B, idle int64, w *peakWatch) {
	b.Helper()
	b.ReportMetric(float64(idle)/(1<<20), "idle-MiB")
	b.ReportMetric(float64(w.peak()-idle)/(1<<20), "peak-above-idle-MiB")
}

// warmUpFile is the file a test puts where the server will serve it, for
// warmUp to ask for: 4 KiB, as the lab's.
const warmUpFile = "warm-up.bin"

// warmUpBody is warmUpFile's content.
var warmUpBody = strings.Repeat("warm-up\n", 512)

// warmUp sends the server a GET of path, a small file, on a connection
// that closes after the answer, reads the answer and the connection's end,
// and returns the server's memory then: the idle baseline of a test that
// bounds growth, taken as the lab takes it, so that what every first
// request maps in or allocates is not counted as growth. Bound a peak with
// watchPeak, not with VmHWM, which holds start-up's peak.
func (s *server) warmUp(path string) proc.Memory {
	s.t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr, 10*time.Second)
	if err != nil {
		s.t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET /%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, s.Addr)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		s.t.Fatalf("warm-up GET /%s: %v", path, err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || n == 0 {
		s.t.Fatalf("warm-up GET /%s: %d, %d bytes, %v", path, resp.StatusCode, n, err)
	}
	// The server closes the connection, and with it its descriptor.
	if _, err := io.Copy(io.Discard, br); err != nil {
		s.t.Fatalf("warm-up GET /%s: the connection did not end: %v", path, err)
	}
	return s.memory()
}

// peakWatch follows a server's resident memory over a stretch of a test.
type peakWatch struct {
	pid        int
	from       proc.Memory
	quit, done chan struct{}
	once       sync.Once
	sampled    int64 // the highest sample; the sampler's until done is closed
}

// watchSample is how often a peakWatch reads the server's RSS.
const watchSample = 10 * time.Millisecond

// watchPeak starts following the server's resident memory, for peak.
func (s *server) watchPeak() *peakWatch {
	return watchPeakOf(s.PID, s.memory())
}

// watchPeakOf is watchPeak of any process, pid, whose memory now is from.
func watchPeakOf(pid int, from proc.Memory) *peakWatch {
	w := &peakWatch{pid: pid, from: from, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(watchSample)
		defer tick.Stop()
		for {
			if m, err := proc.ReadMemory(w.pid); err == nil {
				w.sampled = max(w.sampled, m.RSS)
			}
			select {
			case <-w.quit:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// peak stops the watch and returns the server's highest RSS since
// watchPeak: the highest 10 ms sample, or VmHWM if it rose meanwhile, which
// is then exact (proc.PeakBetween). It may be called more than once.
func (w *peakWatch) peak() int64 {
	w.once.Do(func() { close(w.quit) })
	<-w.done
	to, _ := proc.ReadMemory(w.pid) // zero if the server is gone
	return proc.PeakBetween(w.from, to, w.sampled)
}

// rchar returns the bytes the server has read (sendfile included).
func (s *server) rchar() int64 {
	s.t.Helper()
	io, err := proc.ReadIO(s.PID)
	if err != nil {
		s.t.Fatal(err)
	}
	return io.RChar
}

// waitFor polls cond every 50 ms until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	return poll.Until(timeout, 50*time.Millisecond, cond)
}

// writeRandom writes size pseudo-random bytes (seeded, so reruns match) to
// path and returns their sha256.
func writeRandom(t testing.TB, path string, size int64, seed uint64) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16)})
	if _, err := io.CopyN(io.MultiWriter(f, h), r, size); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// fileSHA returns the sha256 of a file.
func fileSHA(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	return hex.EncodeToString(h.Sum(nil))
}

// bodySHA reads a response body to its end and returns its sha256 and
// length.
func bodySHA(t testing.TB, r io.Reader) (string, int64) {
	t.Helper()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		t.Fatalf("reading body after %d bytes: %v", n, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n
}

// get sends a GET with headers given as name, value pairs.
func get(t testing.TB, url string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// lockedBuffer is a bytes buffer safe for concurrent writes and reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// procFDsTo counts the descriptors of pid open on path.
func procFDsTo(pid int, path string) (int, error) { return proc.FDsTo(pid, path) }
