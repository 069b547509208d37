package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"largo"
	"net"
	"net/http"
	"time"

	"golang.org/x/sys/unix"
)

// The slow clients are raw sockets whatever the configured client, since
// neither a stalled nor a throttled reader can be told to curl or to Go's
// client precisely.

var stalledScenario = &scenario{
	name:     "stalled",
	caseHead: "hold",
	about: func(s Settings) string {
		return fmt.Sprintf("One client sends the request for the %s file and never reads, for %s. Read from file is the server's rchar growth (sendfile included); client got is what sits in the client's socket buffer.", largo.FormatSize(s.Size), time.Duration(s.HoldSeconds*float64(time.Second)))
	},
	cases: holdCase,
	columns: []column{colIdle, colPeak, colAbove,
		{key: keyRead, head: "read from file MB", digits: 1},
		{key: "got_mb", head: "client got MB", digits: 1}},
	run: func(ctx context.Context, r *runner, srv Server, _ string) Result {
		return runSlow(ctx, r, srv, false)
	},
}

var dripScenario = &scenario{
	name:     "drip",
	caseHead: "hold",
	about: func(s Settings) string {
		return fmt.Sprintf("One client reads 64 KiB every 100 ms of the %s file, for %s. A server that respects backpressure reads little more than the client took.", largo.FormatSize(s.Size), time.Duration(s.HoldSeconds*float64(time.Second)))
	},
	cases: holdCase,
	columns: []column{colIdle, colPeak, colAbove,
		{key: keyRead, head: "read from file MB", digits: 1},
		{key: "got_mb", head: "client got MB", digits: 1},
		{key: "read_per_got", head: "read ÷ got", digits: 2}},
	run: func(ctx context.Context, r *runner, srv Server, _ string) Result {
		return runSlow(ctx, r, srv, true)
	},
}

func holdCase(cfg Config) []string { return []string{cfg.Hold.String()} }

// Drip rate: 64 KiB every 100 ms.
const (
	dripChunk  = 64 << 10
	dripPeriod = 100 * time.Millisecond
)

// runSlow holds one client that never reads, or drips.
func runSlow(ctx context.Context, r *runner, srv Server, drip bool) Result {
	var res Result
	f := r.data.random
	in, idle := r.begin(ctx, srv, r.data.dir, false, &res, f.path)
	if in == nil {
		return res
	}
	c, err := net.DialTimeout("tcp", in.addr, 10*time.Second)
	if err != nil {
		res.fail(err)
		r.end(in, idle, &res, 0)
		return res
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /%s HTTP/1.1\r\nHost: %s\r\n\r\n", f.name, in.addr)
	var got int64
	var readErr error
	hold := time.NewTimer(r.cfg.Hold)
	defer hold.Stop()
	if drip {
		tick := time.NewTicker(dripPeriod)
		buf := make([]byte, dripChunk)
	loop:
		for {
			select {
			case <-hold.C:
				break loop
			case <-ctx.Done():
				break loop
			case <-tick.C:
				c.SetReadDeadline(time.Now().Add(dripPeriod))
				n, err := io.ReadFull(c, buf)
				got += int64(n)
				if err != nil && !isTimeout(err) {
					readErr = err
					break loop
				}
			}
		}
		tick.Stop()
	} else {
		select {
		case <-hold.C:
		case <-ctx.Done():
		}
	}
	u := in.usage()
	queued := unreadBytes(c)
	if !drip {
		got = queued
	}
	read := u.rchar - idle.rchar
	res.set("got_mb", float64(got)/1e6)
	if in.failure() == nil { // a dead server's counters read as zero
		res.set(keyRead, float64(read)/1e6)
		if drip && got > 0 {
			res.set("read_per_got", float64(read)/float64(got))
		}
	}
	if readErr != nil {
		res.fail(fmt.Errorf("connection ended after %s: %v", mb(got), readErr))
	}
	r.end(in, idle, &res, 0)
	return res
}

// unreadBytes returns the bytes waiting in a connection's receive buffer.
func unreadBytes(c net.Conn) int64 {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return 0
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return 0
	}
	var n int
	raw.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
	return int64(n)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

var abortScenario = &scenario{
	name:     "abort",
	caseHead: "aborted",
	about: func(s Settings) string {
		return fmt.Sprintf("Downloads of the %s file, five at a time, each reset by its client after 1 MiB of body; then the server's descriptors %s after the last abort.", largo.FormatSize(s.Size), abortWait(s.Quick))
	},
	cases: func(cfg Config) []string {
		if cfg.Quick {
			return []string{"20"}
		}
		return []string{"100"}
	},
	columns: []column{
		{key: "min_got_mib", head: "each got ≥ MiB", digits: 2},
		{key: "fds_idle", head: "fds idle"},
		{key: "fds_after", head: "fds after"},
		{key: "fds_on_file", head: "fds on the file"},
		{key: "leaked", head: "leaked"},
		colPeak,
	},
	run: runAbort,
}

// abortAfter is how much body each aborted download reads.
const abortAfter = 1 << 20

// abortWait is how long the server has to close what the aborts left
// open: 5 s, 2 s in a quick run.
func abortWait(quick bool) time.Duration {
	if quick {
		return 2 * time.Second
	}
	return 5 * time.Second
}

func runAbort(ctx context.Context, r *runner, srv Server, cs string) Result {
	var res Result
	var n int
	fmt.Sscan(cs, &n)
	f := r.data.random
	in, idle := r.begin(ctx, srv, r.data.dir, false, &res, f.path)
	if in == nil {
		return res
	}
	// After the warm-up request: descriptors a server opens lazily on its
	// first request count as idle.
	fdsIdle := idle.fds
	minGot := int64(-1)
	var errs []error
	const wave = 5
	for done := 0; done < n && ctx.Err() == nil; done += wave {
		got := parallel(min(wave, n-done), func(int) result[int64] { return abortOne(in.addr, f.name) })
		for _, g := range got {
			errs = append(errs, g.err)
			if g.err == nil && (minGot < 0 || g.v < minGot) {
				minGot = g.v
			}
		}
		if in.failure() != nil {
			break
		}
	}
	select {
	case <-time.After(abortWait(r.cfg.Quick)):
	case <-ctx.Done():
	}
	u := in.usage()
	onFile := in.fdsTo(f.path)
	res.set("fds_idle", float64(fdsIdle))
	if in.failure() == nil { // a dead server has no descriptors to count
		res.set("fds_after", float64(u.fds))
		res.set("fds_on_file", float64(onFile))
		res.set("leaked", float64(max(u.fds-fdsIdle, onFile, 0)))
	}
	if minGot >= 0 {
		res.set("min_got_mib", mib(minGot))
	}
	res.fail(firstErr(errs))
	r.end(in, idle, &res, 0)
	return res
}

// result is a value or an error.
type result[T any] struct {
	v   T
	err error
}

// abortOne starts a download, reads the headers and 1 MiB of body, checks
// that the body goes on, and resets the connection as a killed client
// would.
func abortOne(addr, name string) result[int64] {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return result[int64]{err: err}
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	fmt.Fprintf(c, "GET /%s HTTP/1.1\r\nHost: %s\r\n\r\n", name, addr)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return result[int64]{err: err}
	}
	if resp.StatusCode != 200 {
		return result[int64]{err: fmt.Errorf("answered %d", resp.StatusCode)}
	}
	got, err := io.CopyN(io.Discard, resp.Body, abortAfter)
	if err != nil {
		return result[int64]{v: got, err: fmt.Errorf("body ended after %s: %v", mb(got), err)}
	}
	// Mid-way: more body is coming.
	if _, err := br.Peek(1); err != nil {
		return result[int64]{v: got, err: fmt.Errorf("no more body after %s: %v", mb(got), err)}
	}
	c.(*net.TCPConn).SetLinger(0)
	return result[int64]{v: got}
}
