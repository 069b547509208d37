package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"largo"
	"largo/proc"
)

// The hostile scenario holds thousands of connections that use a server
// without asking anything of it, beside one normal download, and measures
// whether the server lets them go in time, what they cost it, and what
// they take from the normal client. Its clients are raw sockets, like the
// slow ones.

// hostileIdle is the idle timeout every server of the hostile scenario is
// given (the {idle} placeholder of Server.Hostile): its read-header, body
// and keep-alive timeouts.
const hostileIdle = 5 * time.Second

// hostileGrace is how long past hostileIdle the lab waits for a server to
// cut a hostile connection before it counts the connection as never cut;
// quickGrace in a quick run.
const (
	hostileGrace = 10 * time.Second
	quickGrace   = 2 * time.Second
)

// grace returns the wait past hostileIdle of a run.
func grace(quick bool) time.Duration {
	if quick {
		return quickGrace
	}
	return hostileGrace
}

// hostileKind is one kind of hostile connection.
type hostileKind int

const (
	slowHead   hostileKind = iota // a request head sent a byte a second, never finished
	idleConn                      // one request answered, then silence on a keep-alive connection
	unreadBody                    // a request announcing a body that never comes
	hostileKinds
)

// hostileKeys name each kind in the figures' keys.
var hostileKeys = [hostileKinds]string{"head", "idle", "body"}

var hostileScenario = &scenario{
	name:     "hostile",
	caseHead: "slow heads + idle + unread bodies",
	about: func(s Settings) string {
		return fmt.Sprintf("Hostile connections held at once, each server told to give up on a client after %s (largo --idle-timeout; the naive baseline net/http's ReadHeaderTimeout and IdleTimeout, as Go servers are usually configured; nginx client_header_timeout, client_body_timeout, keepalive_timeout; Caddy read_header, read_body, idle): slow heads send a request head a byte a second and never finish it, idle ones ask for one small file and then say nothing on the kept-alive connection, unread bodies announce a body that never comes (half a GET of a small file with Content-Length: 100, half a PUT of 1 MB). Meanwhile one client downloads the %s file: during the load (loaded), and before it and after it (alone, the mean of both rates). Cut is the time from a connection's first byte (slow heads), from the answer read (idle) or from the head sent (unread bodies) until the server closed it, max and 99th percentile in seconds; never cut is what was still open %s after the idle timeout. Held is the connections open once all had started, and KiB per connection the server's RSS above idle then, divided by them. Peers given as a command have no idle timeout to set, and are not run.",
			hostileIdle, largo.FormatSize(s.Size), grace(s.Quick))
	},
	cases: func(cfg Config) []string {
		if cfg.Quick {
			return []string{"200+200+100"}
		}
		return []string{"2000+2000+1000"}
	},
	columns: []column{
		{key: "alone_mb_per_s", head: "MB/s alone", digits: 0},
		{key: "loaded_mb_per_s", head: "MB/s loaded", digits: 0},
		{key: "loaded_pct", head: "loaded %", digits: 0},
		{key: "held", head: "held", digits: 0},
		{key: "head_max_s", head: "head cut max s", digits: 2},
		{key: "head_p99_s", head: "p99", digits: 2},
		{key: "idle_max_s", head: "idle cut max s", digits: 2},
		{key: "idle_p99_s", head: "p99", digits: 2},
		{key: "body_max_s", head: "body cut max s", digits: 2},
		{key: "body_p99_s", head: "p99", digits: 2},
		{key: "never_cut", head: "never cut", digits: 0},
		{key: "kib_per_conn", head: "KiB per conn", digits: 1},
		colAbove,
	},
	run: runHostile,
}

// parseHostileCase reads "HEADS+IDLE+BODIES".
func parseHostileCase(cs string) ([hostileKinds]int, error) {
	var n [hostileKinds]int
	parts := strings.Split(cs, "+")
	if len(parts) != int(hostileKinds) {
		return n, fmt.Errorf("hostile case %q: want HEADS+IDLE+BODIES", cs)
	}
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || v > 10_000 {
			return n, fmt.Errorf("hostile case %q: %q is not a count from 0 to 10000", cs, p)
		}
		n[i] = v
	}
	return n, nil
}

func runHostile(ctx context.Context, r *runner, srv Server, cs string) Result {
	var res Result
	counts, err := parseHostileCase(cs)
	if err != nil {
		res.fail(err)
		return res
	}
	if srv.Hostile == "" {
		res.fail(fmt.Errorf("%w: no idle timeout to set", errUnsupported))
		return res
	}
	total := counts[slowHead] + counts[idleConn] + counts[unreadBody]
	if err := raiseFDLimit(total + 1000); err != nil {
		res.fail(fmt.Errorf("lab: %v", err))
		return res
	}
	hsrv := srv
	hsrv.Command = srv.Hostile
	f := r.data.random
	in, idle := r.begin(ctx, hsrv, r.data.dir, false, &res, f.path)
	if in == nil {
		return res
	}
	if lim, err := proc.MaxOpenFiles(in.pid); err == nil && lim < int64(total+100) {
		res.fail(fmt.Errorf("lab: the server may open %d descriptors, fewer than the %d connections", lim, total))
		r.end(in, idle, &res, 0)
		return res
	}
	var sent int64
	alone, n, err := r.timedFetch(ctx, in, f)
	sent += n
	if err != nil {
		res.fail(fmt.Errorf("download alone: %v", err))
		r.end(in, idle, &res, sent)
		return res
	}
	res.set("alone_mb_per_s", alone)

	load := startHostile(ctx, in.addr, r.data.warmUp.name, counts, grace(r.cfg.Quick))
	held, atHeld := load.waitHeld(ctx, hostileIdle/2), in.usage()
	loaded, n, loadedErr := r.timedFetch(ctx, in, f)
	sent += n
	cuts, never := load.wait()
	// Alone again, once every hostile connection has ended: the rate
	// alone is the mean of both, so that neither a first download's
	// warm-up nor a drift of the shared machine favours one side.
	after, n, err := r.timedFetch(ctx, in, f)
	sent += n
	if err != nil {
		res.fail(fmt.Errorf("download alone after the load: %v", err))
	} else {
		alone = (alone + after) / 2
		res.set("alone_mb_per_s", alone)
	}

	res.set("held", float64(held))
	if held > 0 && in.failure() == nil {
		res.set("kib_per_conn", float64(atHeld.rss-idle.rss)/1024/float64(held))
	}
	if loadedErr != nil {
		res.fail(fmt.Errorf("download loaded: %v", loadedErr))
	} else {
		res.set("loaded_mb_per_s", loaded)
		res.set("loaded_pct", 100*loaded/alone)
	}
	for k, ds := range cuts {
		if len(ds) > 0 {
			res.set(hostileKeys[k]+"_max_s", Percentile(ds, 100))
			res.set(hostileKeys[k]+"_p99_s", Percentile(ds, 99))
		}
	}
	res.set("never_cut", float64(never))
	res.fail(load.failure())
	r.end(in, idle, &res, sent)
	return res
}

// timedFetch downloads f whole on a fresh connection and returns its rate
// in MB/s and the bytes received.
func (r *runner) timedFetch(ctx context.Context, in *instance, f dataFile) (float64, int64, error) {
	cl := r.client(1)
	defer cl.close()
	tctx, cancel := context.WithTimeout(ctx, transferTimeout(f.size))
	defer cancel()
	start := time.Now()
	fr := cl.fetch(tctx, fetchReq{url: in.base + f.name})
	wall := time.Since(start)
	if err := fr.check(200, f.size); err != nil {
		return 0, fr.bytes, err
	}
	return float64(fr.bytes) / 1e6 / wall.Seconds(), fr.bytes, nil
}

// raiseFDLimit raises this process's soft descriptor limit to its hard
// one, which the servers it starts inherit, and fails if that leaves
// fewer than need.
func raiseFDLimit(need int) error {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
			return err
		}
	}
	if lim.Cur < uint64(need) {
		return fmt.Errorf("the descriptor limit is %d, the scenario needs %d (raise ulimit -n)", lim.Cur, need)
	}
	return nil
}

// hostileLoad is the hostile connections of one run.
type hostileLoad struct {
	grace   time.Duration  // how long past hostileIdle a connection is held
	open    atomic.Int64   // connections open now
	started sync.WaitGroup // done as each connection has made its request
	ended   sync.WaitGroup // done as each connection has ended
	mu      sync.Mutex
	cuts    [hostileKinds][]float64 // seconds until the server cut each connection
	never   int                     // connections the server never cut
	errs    []error                 // connections that did not go as planned
}

// hostileDialers bounds the dials in flight, so that the listener's
// queue does not overflow while thousands of connections start.
const hostileDialers = 64

// startHostile opens the hostile connections: counts of each kind, asking
// for the small file name, each held until the server cuts it or for
// hostileIdle and grace.
func startHostile(ctx context.Context, addr, name string, counts [hostileKinds]int, grace time.Duration) *hostileLoad {
	l := &hostileLoad{grace: grace}
	dial := make(chan struct{}, hostileDialers)
	for k, n := range counts {
		for i := range n {
			l.started.Add(1)
			l.ended.Add(1)
			go func() {
				defer l.ended.Done()
				l.one(ctx, addr, name, hostileKind(k), i, dial)
			}()
		}
	}
	return l
}

// waitHeld waits until every connection has made its request, or for at
// most limit, and returns how many are open then.
func (l *hostileLoad) waitHeld(ctx context.Context, limit time.Duration) int {
	done := make(chan struct{})
	go func() { l.started.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
	case <-ctx.Done():
	}
	return int(l.open.Load())
}

// wait waits for every connection to end and returns the cut times by
// kind and the count never cut.
func (l *hostileLoad) wait() ([hostileKinds][]float64, int) {
	l.ended.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cuts, l.never
}

// failure summarises the connections that did not go as planned.
func (l *hostileLoad) failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) == 0 {
		return nil
	}
	return fmt.Errorf("%d hostile connections failed: %v", len(l.errs), l.errs[0])
}

// one runs hostile connection i of kind k: it dials, makes its request,
// then waits for the server to close the connection and records when.
func (l *hostileLoad) one(ctx context.Context, addr, name string, k hostileKind, i int, dial chan struct{}) {
	startedDone := sync.OnceFunc(l.started.Done)
	defer startedDone()
	dial <- struct{}{}
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	<-dial
	if err != nil {
		l.record(k, 0, false, fmt.Errorf("dial: %v", err))
		return
	}
	defer c.Close()
	l.open.Add(1)
	defer l.open.Add(-1)
	stop := time.Now().Add(hostileIdle + l.grace)
	c.SetDeadline(stop)
	from := time.Now()
	var drip bool
	switch k {
	case slowHead:
		_, err = fmt.Fprintf(c, "GET /%s HTTP/1.1\r\nHost: %s\r\nX-", name, addr)
		drip = true
	case idleConn:
		if _, err = fmt.Fprintf(c, "GET /%s HTTP/1.1\r\nHost: %s\r\n\r\n", name, addr); err == nil {
			err = readAnswer(c)
		}
		from = time.Now()
	case unreadBody:
		if i%2 == 0 {
			_, err = fmt.Fprintf(c, "GET /%s HTTP/1.1\r\nHost: %s\r\nContent-Length: 100\r\n\r\n", name, addr)
		} else {
			_, err = fmt.Fprintf(c, "PUT /hostile-%d.bin HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000000\r\n\r\n", i, addr)
		}
		from = time.Now()
	}
	if err != nil {
		l.record(k, 0, false, err)
		return
	}
	startedDone()
	cut, err := waitCut(ctx, c, drip, stop)
	if errors.Is(err, context.Canceled) {
		return
	}
	if !cut {
		l.record(k, 0, false, err)
		return
	}
	l.record(k, time.Since(from).Seconds(), true, nil)
}

// record counts one connection's end: cut after secs, or never cut
// (err nil: held past the grace), or failed with err.
func (l *hostileLoad) record(k hostileKind, secs float64, cut bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case cut:
		l.cuts[k] = append(l.cuts[k], secs)
	case err == nil:
		l.never++
	default:
		l.errs = append(l.errs, fmt.Errorf("%s: %v", hostileKeys[k], err))
	}
}

// readAnswer reads one answer to a GET, body included.
func readAnswer(c net.Conn) error {
	br := bufio.NewReaderSize(c, 512)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("answered %d", resp.StatusCode)
	}
	if br.Buffered() > 0 {
		return errors.New("more than one answer")
	}
	return nil
}

// waitCut reads whatever the server sends (an answer, an error page)
// until it closes the connection, and reports whether it did before stop;
// with drip, it sends one more byte of a header name every second
// meanwhile. err nil with cut false means held until stop.
func waitCut(ctx context.Context, c net.Conn, drip bool, stop time.Time) (cut bool, err error) {
	buf := make([]byte, 512)
	for {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		next := stop
		if drip {
			next = time.Now().Add(time.Second)
			if next.After(stop) {
				next = stop
			}
		}
		c.SetReadDeadline(next)
		_, err := c.Read(buf)
		switch {
		case err == nil:
			continue
		case isTimeout(err) && !time.Now().Before(stop):
			return false, nil
		case isTimeout(err):
			if _, err := c.Write([]byte("a")); err != nil {
				return true, nil // the server is gone: a reset
			}
		default:
			return true, nil // EOF or reset: the server closed it
		}
	}
}
