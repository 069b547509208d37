package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"largo/internal/ready"
)

// Server is a server under test: how to start a fresh process of it
// serving a folder on a loopback port.
type Server struct {
	// Name labels the server in the report.
	Name string
	// Command is the server's command line, run by /bin/sh after its
	// placeholders are replaced: {dir} the folder to serve, {port} the
	// port to listen on at 127.0.0.1, {tmp} a scratch folder of this
	// process, {exe} the largo binary, {idle} the idle timeout of the
	// hostile scenario. Values are shell-quoted.
	Command string
	// Upload, if set, replaces Command in the upload scenario (a server
	// that needs a flag to accept uploads).
	Upload string
	// Hostile replaces Command in the hostile scenario: the server with
	// its read-header, body and keep-alive timeouts set to the
	// placeholder {idle} (a duration such as 5s). A server without it is
	// not run in that scenario.
	Hostile string
	// Files are written into {tmp} before the server starts, keyed by
	// name; their content may use the same placeholders, unquoted.
	Files map[string]string
	// PrintsURL means the server picks its own port (Command listens on
	// port 0) and announces where it listens with the ready line of
	// package ready on stdout, as largo does; otherwise the lab picks a
	// free port and waits until it accepts connections.
	PrintsURL bool
}

// Largo is largo itself, started as `largo serve` of the lab's own binary,
// without its limit of connections per address: every client of the lab
// comes from 127.0.0.1; and without its background hashing of files that
// have no digest (--digest-rate 0), which would read the scenario's files
// beside the transfers measured: its cost is its own rate, not serving's.
// Its upload command adds --upload --upload-open: a largo without those
// flags fails to start there, and the upload scenario reports it as not
// supported.
func Largo() Server {
	return Server{
		Name:      "largo",
		Command:   "exec {exe} serve {dir} --listen 127.0.0.1:0 --max-conns-per-ip 0 --digest-rate 0",
		Upload:    "exec {exe} serve {dir} --listen 127.0.0.1:0 --max-conns-per-ip 0 --digest-rate 0 --upload --upload-open",
		Hostile:   "exec {exe} serve {dir} --listen 127.0.0.1:0 --max-conns-per-ip 0 --digest-rate 0 --idle-timeout {idle}",
		PrintsURL: true,
	}
}

// Naive is the deliberately naive buffered baseline (NaiveHandler),
// started as `largo bench naive-server`.
func Naive() Server {
	return Server{
		Name:      "naive",
		Command:   "exec {exe} bench naive-server {dir} --listen 127.0.0.1:0",
		Hostile:   "exec {exe} bench naive-server {dir} --listen 127.0.0.1:0 --idle-timeout {idle}",
		PrintsURL: true,
	}
}

// instance is a running server process.
type instance struct {
	name   string
	cmd    *exec.Cmd
	pid    int
	addr   string // host:port
	base   string // http://host:port/
	admin  string // the admin listener's base URL, when largo has one
	tmp    string
	stderr *tailBuffer
	done   chan struct{} // closed when the process has ended
	err    error         // of Wait, once done is closed
	guard  *sampler
}

// startTimeout bounds how long a server may take to start listening.
const startTimeout = 20 * time.Second

// start starts srv serving dir, with the memory guard watching it.
func (r *runner) start(ctx context.Context, srv Server, dir string, upload bool) (*instance, error) {
	command := srv.Command
	if upload && srv.Upload != "" {
		command = srv.Upload
	}
	tmp, err := os.MkdirTemp("", "largo-bench-"+safeName(srv.Name)+"-")
	if err != nil {
		return nil, err
	}
	port := "0"
	if !srv.PrintsURL {
		if port, err = freePort(); err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
	}
	vals := map[string]string{"{dir}": dir, "{port}": port, "{tmp}": tmp, "{exe}": r.cfg.Exe, "{idle}": hostileIdle.String()}
	for name, content := range srv.Files {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(expand(content, vals, false)), 0o644); err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
	}
	in := &instance{name: srv.Name, tmp: tmp, stderr: &tailBuffer{max: 4096}, done: make(chan struct{})}
	in.cmd = exec.Command("/bin/sh", "-c", expand(command, vals, true))
	in.cmd.Dir = tmp
	in.cmd.Env = append(os.Environ(), "HOME="+tmp, "XDG_CONFIG_HOME="+tmp, "XDG_DATA_HOME="+tmp)
	// Its own process group, so that the whole tree can be killed; and
	// killed with the lab if the lab dies.
	in.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	in.cmd.Stderr = in.stderr
	out, err := in.cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	if err := in.cmd.Start(); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("starting %s: %w", srv.Name, err)
	}
	in.pid = in.cmd.Process.Pid
	in.guard = startSampler(in.pid, r.cfg.MemoryGuard, in.kill)
	found := make(chan ready.Line, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l, ok := ready.Parse(sc.Bytes()); ok {
				select {
				case found <- l:
				default:
				}
			}
			in.stderr.Write(append(sc.Bytes(), '\n'))
		}
		io.Copy(io.Discard, out)
		in.err = in.cmd.Wait()
		close(in.done)
	}()
	if err := in.waitReady(ctx, srv.PrintsURL, port, found); err != nil {
		in.stop()
		return nil, err
	}
	in.base = "http://" + in.addr + "/"
	return in, nil
}

// waitReady waits until the server listens.
func (in *instance) waitReady(ctx context.Context, printsURL bool, port string, found <-chan ready.Line) error {
	deadline := time.After(startTimeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case l := <-found:
			if printsURL {
				in.addr, in.admin = l.Addr, l.Admin
				return nil
			}
		case <-in.done:
			if at := in.guard.killedAt(); at > 0 {
				return fmt.Errorf("killed by the guard at %d MiB before serving", at>>20)
			}
			why := in.stderr.lastLine()
			if why == "" && in.err != nil {
				why = in.err.Error()
			}
			return fmt.Errorf("exited before serving: %s", why)
		case <-deadline:
			return fmt.Errorf("not listening after %s: %s", startTimeout, in.stderr.lastLine())
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if printsURL {
				continue
			}
			addr := net.JoinHostPort("127.0.0.1", port)
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				in.addr = addr
				return nil
			}
		}
	}
}

// warmUp asks the server for f, the first request of its life, on a
// connection that closes after the answer, and reads the answer whole and
// then the connection's end. Whatever serving a request maps in or
// allocates once (code, buffers, a worker's first connection) is then in
// place, for every server alike, and no connection is left open.
func (in *instance) warmUp(f dataFile) error {
	c, err := net.DialTimeout("tcp", in.addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET /%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", f.name, in.addr)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return fmt.Errorf("GET /%s: body ended after %d bytes: %v", f.name, n, err)
	}
	if resp.StatusCode != http.StatusOK || n != f.size {
		return fmt.Errorf("GET /%s: answered %d with %d bytes; want 200 with %d", f.name, resp.StatusCode, n, f.size)
	}
	// The server closes the connection after its answer.
	_, err = io.Copy(io.Discard, br)
	return err
}

// kill ends the server's whole process group at once.
func (in *instance) kill() {
	syscall.Kill(-in.pid, syscall.SIGKILL)
}

// stop kills the server, waits for it and removes its scratch folder.
func (in *instance) stop() {
	in.guard.stop()
	in.kill()
	select {
	case <-in.done:
	case <-time.After(10 * time.Second):
	}
	os.RemoveAll(in.tmp)
}

// failure says why the server is no longer running, or nil if it is.
func (in *instance) failure() error {
	if at := in.guard.killedAt(); at > 0 {
		return fmt.Errorf("killed by the guard at %d MiB", at>>20)
	}
	select {
	case <-in.done:
		msg := "crashed"
		if in.err != nil {
			msg += " (" + in.err.Error() + ")"
		}
		if line := in.stderr.lastLine(); line != "" {
			msg += ": " + line
		}
		return errors.New(msg)
	default:
		return nil
	}
}

// expand replaces the placeholders of s, shell-quoting the values when
// quote is set.
func expand(s string, vals map[string]string, quote bool) string {
	for k, v := range vals {
		if quote {
			v = shellQuote(v)
		}
		s = strings.ReplaceAll(s, k, v)
	}
	return s
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:+=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// safeName keeps the letters and digits of a name, for a folder name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, s)
}

// freePort returns a loopback port free at the time of the call.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), nil
}

// tailBuffer keeps the last max bytes written to it; safe for concurrent
// use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

// Write keeps p, dropping what falls out of the last max bytes.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

// lastLine returns the last non-empty line written, trimmed to 200 bytes.
func (t *tailBuffer) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.b)), "\n")
	line := strings.TrimSpace(lines[len(lines)-1])
	if len(line) > 200 {
		line = line[:200] + "..."
	}
	return line
}
