package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// fetcher is an HTTP client the scenarios drive: one transfer per call,
// many calls at once. Implementations are safe for concurrent use.
type fetcher interface {
	fetch(ctx context.Context, req fetchReq) fetchResult
	close()
}

// fetchReq is one transfer.
type fetchReq struct {
	method string // GET unless set
	url    string
	header []string // name, value pairs
	upload string   // path of a file sent as the body (PUT)
	out    string   // file the body is written to; empty discards it
	resume bool     // continue out from its current size with a Range request
}

// fetchResult is what a transfer did.
type fetchResult struct {
	status   int
	encoding string // Content-Encoding of the response
	length   int64  // Content-Length of the response, -1 if none
	bytes    int64  // body bytes received
	err      error
}

// goClient is Go's HTTP client, with a transport of its own that asks for
// no compression (the scenarios ask explicitly) and keeps enough idle
// connections for its concurrency.
type goClient struct {
	tr *http.Transport
	c  *http.Client
}

var _ fetcher = (*goClient)(nil)

func newGoClient(count int) *goClient {
	tr := &http.Transport{
		DisableCompression:  true,
		MaxIdleConnsPerHost: max(count, 2),
		IdleConnTimeout:     30 * time.Second,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
	}
	return &goClient{tr: tr, c: &http.Client{Transport: tr}}
}

func (g *goClient) close() { g.tr.CloseIdleConnections() }

func (g *goClient) fetch(ctx context.Context, req fetchReq) fetchResult {
	res := fetchResult{length: -1}
	var out *os.File
	var from int64
	if req.out != "" {
		flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if req.resume {
			flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
		f, err := os.OpenFile(req.out, flags, 0o644)
		if err != nil {
			res.err = err
			return res
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && req.resume {
			from = st.Size()
		}
		out = f
	}
	method := req.method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	var size int64
	if req.upload != "" {
		f, err := os.Open(req.upload)
		if err != nil {
			res.err = err
			return res
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			res.err = err
			return res
		}
		body, size = f, st.Size()
	}
	hr, err := http.NewRequestWithContext(ctx, method, req.url, body)
	if err != nil {
		res.err = err
		return res
	}
	hr.ContentLength = size
	for i := 0; i+1 < len(req.header); i += 2 {
		hr.Header.Set(req.header[i], req.header[i+1])
	}
	if req.resume && from > 0 {
		hr.Header.Set("Range", fmt.Sprintf("bytes=%d-", from))
	}
	resp, err := g.c.Do(hr)
	if err != nil {
		res.err = err
		return res
	}
	defer resp.Body.Close()
	res.status, res.length, res.encoding = resp.StatusCode, resp.ContentLength, resp.Header.Get("Content-Encoding")
	var w io.Writer = discard{}
	if out != nil {
		if req.resume && from > 0 && resp.StatusCode == http.StatusOK {
			// The server ignored the range: start the file again.
			if err := out.Truncate(0); err != nil {
				res.err = err
				return res
			}
		}
		w = out
	}
	res.bytes, res.err = io.CopyBuffer(w, resp.Body, make([]byte, 256<<10))
	return res
}

// discard is io.Discard without its ReadFrom, so that copies use the
// caller's large buffer and the client spends less CPU per byte.
type discard struct{}

// Write discards p.
func (discard) Write(p []byte) (int, error) { return len(p), nil }

// curlClient runs one curl process per transfer.
type curlClient struct{}

var _ fetcher = curlClient{}

func (curlClient) close() {}

// lookCurl finds curl.
func lookCurl() (string, error) {
	p, err := exec.LookPath("curl")
	if err != nil {
		return "", errors.New("--client curl: curl not found; install it (apt-get install curl)")
	}
	return p, nil
}

// curlWrite is what curl prints after a transfer, one field per line.
const curlWrite = "%{http_code}\\n%{size_download}\\n%header{content-length}\\n%header{content-encoding}\\n"

func (curlClient) fetch(ctx context.Context, req fetchReq) fetchResult {
	res := fetchResult{length: -1}
	args := []string{"-sS", "--no-progress-meter", "-w", curlWrite, "-H", "Expect:"}
	if req.method != "" && req.upload == "" {
		args = append(args, "-X", req.method)
	}
	for i := 0; i+1 < len(req.header); i += 2 {
		args = append(args, "-H", req.header[i]+": "+req.header[i+1])
	}
	if req.upload != "" {
		args = append(args, "-T", req.upload)
	}
	out := req.out
	if out == "" {
		out = os.DevNull
	}
	if req.resume {
		args = append(args, "-C", "-")
	}
	args = append(args, "-o", out, req.url)
	cmd := exec.CommandContext(ctx, "curl", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	f := strings.Split(stdout.String(), "\n")
	if len(f) >= 4 {
		res.status, _ = strconv.Atoi(f[0])
		res.bytes, _ = strconv.ParseInt(f[1], 10, 64)
		if n, err := strconv.ParseInt(strings.TrimSpace(f[2]), 10, 64); err == nil {
			res.length = n
		}
		res.encoding = strings.TrimSpace(f[3])
	}
	if err != nil && ctx.Err() != nil {
		res.err = fmt.Errorf("curl stopped: %w", ctx.Err())
	} else if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		res.err = errors.New(msg)
	}
	return res
}

// check turns a result into an error unless it is a complete response
// with the wanted status and, when want is not negative, want body bytes.
func (res fetchResult) check(status int, want int64) error {
	switch {
	case errors.Is(res.err, context.DeadlineExceeded):
		return fmt.Errorf("timed out after %s of body", mb(res.bytes))
	case res.err != nil && res.status == 0:
		return res.err
	case res.status != status:
		return fmt.Errorf("answered %d %s", res.status, http.StatusText(res.status))
	case res.err != nil:
		return fmt.Errorf("body cut after %s: %v", mb(res.bytes), res.err)
	case want >= 0 && res.bytes != want:
		return fmt.Errorf("short body: %s of %s", mb(res.bytes), mb(want))
	}
	return nil
}

// mb formats a byte count in MB (10^6), the unit of throughputs.
func mb(n int64) string { return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + " MB" }
