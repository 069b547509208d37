package lab

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// idleConns is how many keep-alive connections the idle scenario holds
// (idleQuick with Quick), and idleSettle how long it leaves them idle
// before it reads the server's figures.
const (
	idleConns  = 10000
	idleQuick  = 1000
	idleSettle = 2 * time.Second
)

var idleScenario = &scenario{
	name:     "idle",
	caseHead: "connections",
	about: func(Settings) string {
		return "Keep-alive connections, each having fetched the 4 KiB warm-up file once, then left idle and held open together. KiB/connection is the server's resident memory above its idle figure, over the connections held; fds is the server's descriptors while they are held."
	},
	cases: func(cfg Config) []string {
		if cfg.Quick {
			return []string{strconv.Itoa(idleQuick)}
		}
		return []string{strconv.Itoa(idleConns)}
	},
	columns: []column{
		{key: "held", head: "held", digits: 0},
		{key: "kib_per_conn", head: "KiB/connection", digits: 1},
		{key: "fds", head: "fds", digits: 0},
		colIdle, colPeak, colAbove,
	},
	run: runIdle,
}

func runIdle(ctx context.Context, r *runner, srv Server, cs string) Result {
	var res Result
	n, err := strconv.Atoi(cs)
	if err != nil {
		res.fail(err)
		return res
	}
	in, idle := r.begin(ctx, manyConns(srv), r.data.dir, false, &res)
	if in == nil {
		return res
	}
	conns, err := holdIdle(ctx, in.addr, r.data.warmUp, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	res.set("held", float64(len(conns)))
	res.fail(err)
	select {
	case <-time.After(idleSettle):
	case <-ctx.Done():
	}
	res.set("fds", float64(in.usage().fds))
	r.end(in, idle, &res, 0) // with the connections still open
	if len(conns) > 0 {
		res.set("kib_per_conn", res.Values[keyAbove]*1024/float64(len(conns)))
	}
	return res
}

// manyConns returns srv able to hold the scenario's connections: the
// nginx preset's workers take 4096 connections each, which its other
// scenarios keep (a larger table costs nginx idle memory there), so here
// alone they take more.
func manyConns(srv Server) Server {
	if srv.Name != "nginx" || srv.Command != presets["nginx"]().Command {
		return srv
	}
	files := maps.Clone(srv.Files)
	files["nginx.conf"] = strings.Replace(files["nginx.conf"], "events { worker_connections 4096; }",
		"worker_rlimit_nofile 32768;\nevents { worker_connections 16384; }", 1)
	srv.Files = files
	return srv
}

// holdIdle opens n connections to addr, fetches f once on each with
// keep-alive, and returns them open and idle. Sixty-four are opened at a
// time. It stops at the first failure, returning those opened so far.
func holdIdle(ctx context.Context, addr string, f dataFile, n int) ([]net.Conn, error) {
	conns := make([]net.Conn, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(64, n) {
		wg.Go(func() {
			for i := range next {
				conns[i], errs[i] = keepAlive(addr, f)
			}
		})
	}
	var failed error
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			failed = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	var open []net.Conn
	for i, c := range conns {
		if c != nil {
			open = append(open, c)
		}
		if errs[i] != nil && failed == nil {
			failed = fmt.Errorf("connection %d of %d: %v", i+1, n, errs[i])
		}
	}
	return open, failed
}

// keepAlive opens a connection, GETs f on it and checks the answer, and
// returns the connection open.
func keepAlive(addr string, f dataFile) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(c, "GET /%s HTTP/1.1\r\nHost: %s\r\n\r\n", f.name, addr)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	got, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && (resp.StatusCode != http.StatusOK || got != f.size || resp.Close) {
		err = fmt.Errorf("GET /%s: answered %d with %d bytes (closing: %v); want 200 with %d, kept alive", f.name, resp.StatusCode, got, resp.Close, f.size)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return c, nil
}
