package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// smallConns is how many keep-alive connections the small scenario holds,
// and smallDuration how long it drives them (smallQuick with Quick).
const (
	smallConns    = 64
	smallDuration = 10 * time.Second
	smallQuick    = 2 * time.Second
)

var smallScenario = &scenario{
	name:     "small",
	caseHead: "connections",
	about: func(Settings) string {
		return fmt.Sprintf("GETs of the 4 KiB warm-up file over %d keep-alive connections for a fixed time, by wrk (2 threads) when it is installed, else by the lab's own Go client; largo writes its access log (to the lab's pipe). CPU µs/request is the server's CPU time per answer, the steadiest figure on a shared machine.", smallConns)
	},
	cases:   func(Config) []string { return []string{strconv.Itoa(smallConns)} },
	columns: []column{{key: "rps", head: "requests/s", digits: 0}, {key: "cpu_us_per_req", head: "CPU µs/request", digits: 1}, colIdle, colAbove, {key: "client", head: "client", text: true}},
	run:     runSmall,
}

func runSmall(ctx context.Context, r *runner, srv Server, cs string) Result {
	var res Result
	conns, err := strconv.Atoi(cs)
	if err != nil {
		res.fail(err)
		return res
	}
	d := smallDuration
	if r.cfg.Quick {
		d = smallQuick
	}
	f := r.data.warmUp
	in, idle := r.begin(ctx, srv, r.data.dir, false, &res, f.path)
	if in == nil {
		return res
	}
	var n int64
	var wall time.Duration
	if wrk, err := exec.LookPath("wrk"); err == nil {
		res.note("client", "wrk")
		n, wall, err = runWrk(ctx, wrk, in.base+f.name, conns, d)
		res.fail(err)
	} else {
		res.note("client", "go")
		n, wall, err = hammer(ctx, in.base+f.name, f.size, conns, d)
		res.fail(err)
	}
	u := r.end(in, idle, &res, n*f.size)
	if n > 0 && wall > 0 {
		res.set("rps", float64(n)/wall.Seconds())
		res.set("cpu_us_per_req", (u.cpu-idle.cpu).Seconds()*1e6/float64(n))
	}
	return res
}

// wrk's summary lines.
var (
	wrkTotal  = regexp.MustCompile(`(\d+) requests in ([\d.]+)(us|ms|s|m)\b`)
	wrkNon2xx = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	wrkSocket = regexp.MustCompile(`Socket errors: .*`)
)

// runWrk drives url with wrk, two threads over conns connections for d,
// and returns the requests answered and the time they took; with a
// script (wrk's -s), the script makes the requests.
func runWrk(ctx context.Context, wrk, url string, conns int, d time.Duration, script ...string) (int64, time.Duration, error) {
	cctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	secs := strconv.Itoa(max(1, int(d.Round(time.Second)/time.Second)))
	args := []string{"-t2", "-c" + strconv.Itoa(conns), "-d" + secs + "s"}
	for _, s := range script {
		args = append(args, "-s", s)
	}
	out, err := exec.CommandContext(cctx, wrk, append(args, url)...).CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("wrk: %v: %s", err, lastLine(out))
	}
	return parseWrk(string(out))
}

// parseWrk reads the requests and their time from wrk's summary; answers
// other than 2xx or 3xx, or socket errors other than the connections wrk
// cuts at its end (reads and timeouts), fail it.
func parseWrk(out string) (int64, time.Duration, error) {
	m := wrkTotal.FindStringSubmatch(out)
	if m == nil {
		return 0, 0, fmt.Errorf("wrk: no summary in its output: %s", lastLine([]byte(out)))
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	v, _ := strconv.ParseFloat(m[2], 64)
	unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second, "m": time.Minute}[m[3]]
	wall := time.Duration(v * float64(unit))
	if bad := wrkNon2xx.FindStringSubmatch(out); bad != nil {
		return n, wall, fmt.Errorf("wrk: %s answers were not 2xx or 3xx", bad[1])
	}
	if se := wrkSocket.FindString(out); se != "" && (strings.Contains(se, "connect ") && !strings.Contains(se, "connect 0,") || strings.Contains(se, "write ") && !strings.Contains(se, "write 0,")) {
		return n, wall, fmt.Errorf("wrk: %s", se)
	}
	if n == 0 || wall <= 0 {
		return n, wall, errors.New("wrk: no request answered")
	}
	return n, wall, nil
}

// lastLine is the last non-empty line of out, for an error message.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// hammer is the lab's own stand-in for wrk: conns goroutines, each with a
// keep-alive connection, GET url one after the other for d, and each
// answer must be 200 with size bytes.
func hammer(ctx context.Context, url string, size int64, conns int, d time.Duration) (int64, time.Duration, error) {
	return hammerEach(ctx, func(int, int) string { return url }, size, conns, d)
}

// hammerEach is hammer with the URL of each request made by urlOf, given
// the connection's number and the request's on that connection.
func hammerEach(ctx context.Context, urlOf func(conn, i int) string, size int64, conns int, d time.Duration) (int64, time.Duration, error) {
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: conns}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	dctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var n atomic.Int64
	var once sync.Once
	var first error
	start := time.Now()
	var wg sync.WaitGroup
	for conn := range conns {
		wg.Go(func() {
			for i := 0; dctx.Err() == nil; i++ {
				err := getOnce(c, urlOf(conn, i), size)
				if err != nil {
					if dctx.Err() == nil {
						once.Do(func() { first = err })
						cancel()
					}
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	return n.Load(), time.Since(start), first
}

// getOnce GETs url and checks the answer: 200 and size bytes.
func getOnce(c *http.Client, url string, size int64) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || got != size {
		return fmt.Errorf("GET %s: %d with %d bytes, want 200 with %d", url, resp.StatusCode, got, size)
	}
	return nil
}
