package lab

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"largo"
)

// dataSet is the files the scenarios serve, in one folder.
type dataSet struct {
	dir      string
	random   dataFile // incompressible, cfg.Size bytes
	small    dataFile // incompressible, at most compressFileSize
	log      dataFile // realistic log lines, at most compressFileSize
	ceiling  []dataFile
	warmUp   dataFile // the small file of every server's warm-up request
	temporar bool     // dir is removed by cleanup
}

// dataFile is one file of the data set.
type dataFile struct {
	name string // relative to the data folder
	path string
	size int64
	sha  string // hex sha256; empty for sparse files
}

// ceilingSizes are the sparse files of the ceiling scenario: just past
// the 2 GiB that buffered servers cannot hold in one buffer, and past
// 4 GiB.
var ceilingSizes = []int64{2<<30 + 1, 5 << 30}

// prepareData generates the data set, or reuses the files of cfg.DataDir
// that already have the right size.
func prepareData(ctx context.Context, cfg Config) (*dataSet, error) {
	d := &dataSet{dir: cfg.DataDir}
	if d.dir == "" {
		dir, err := os.MkdirTemp("", "largo-bench-")
		if err != nil {
			return nil, err
		}
		d.dir, d.temporar = dir, true
	} else if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return nil, err
	}
	var err error
	fail := func(e error) (*dataSet, error) { d.cleanup(); return nil, e }
	smallSize := min(cfg.Size, compressFileSize)
	if cfg.Quick {
		smallSize = min(cfg.Size, quickCompressSize)
	}
	if d.random, err = d.ensure(ctx, cfg, "random-"+sizeName(cfg.Size)+".bin", cfg.Size, writeRandom); err != nil {
		return fail(err)
	}
	d.small = d.random
	if smallSize != cfg.Size {
		if d.small, err = d.ensure(ctx, cfg, "random-"+sizeName(smallSize)+".bin", smallSize, writeRandom); err != nil {
			return fail(err)
		}
	}
	if d.log, err = d.ensure(ctx, cfg, "access-"+sizeName(smallSize)+".log", smallSize, writeLog); err != nil {
		return fail(err)
	}
	if d.warmUp, err = writeWarmUp(d.dir); err != nil {
		return fail(err)
	}
	for _, size := range ceilingSizes {
		f, err := d.sparse("sparse-"+sizeName(size)+".img", size)
		if err != nil {
			return fail(err)
		}
		d.ceiling = append(d.ceiling, f)
	}
	return d, nil
}

// cleanup removes the data folder if the lab made it.
func (d *dataSet) cleanup() {
	if d.temporar {
		os.RemoveAll(d.dir)
	}
}

// sizeName names a size in a file name: 1GiB, 64MiB, 2GiB+1.
func sizeName(n int64) string {
	for _, u := range []struct {
		s    string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size {
			name := strconv.FormatInt(n/u.size, 10) + u.s
			if rest := n % u.size; rest != 0 {
				name += "+" + strconv.FormatInt(rest, 10)
			}
			return name
		}
	}
	return strconv.FormatInt(n, 10)
}

// ensure returns the file name of size bytes in the data folder, writing
// it with gen unless it already has that size and a recorded checksum.
func (d *dataSet) ensure(ctx context.Context, cfg Config, name string, size int64, gen func(io.Writer, int64) error) (dataFile, error) {
	f := dataFile{name: name, path: filepath.Join(d.dir, name), size: size}
	sumPath := filepath.Join(d.dir, "."+name+".sha256")
	if st, err := os.Stat(f.path); err == nil && st.Size() == size {
		if b, err := os.ReadFile(sumPath); err == nil && len(strings.TrimSpace(string(b))) == 64 {
			f.sha = strings.TrimSpace(string(b))
			return f, nil
		}
	}
	fmt.Fprintf(cfg.Progress, "generating %s (%s)\n", f.path, largo.FormatSize(size))
	start := time.Now()
	out, err := os.Create(f.path)
	if err != nil {
		return f, err
	}
	h := sha256.New()
	w := &ctxWriter{ctx: ctx, w: io.MultiWriter(out, h)}
	err = gen(w, size)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.path)
		return f, fmt.Errorf("writing %s: %w", f.path, err)
	}
	f.sha = hex.EncodeToString(h.Sum(nil))
	if err := os.WriteFile(sumPath, []byte(f.sha+"\n"), 0o644); err != nil {
		return f, err
	}
	fmt.Fprintf(cfg.Progress, "        written in %.1fs\n", time.Since(start).Seconds())
	return f, nil
}

// warmUpSize is the size of the file every server is asked for once
// before its idle figures are read: small, so that even a buffering server
// keeps little of it.
const warmUpSize = 4 << 10

// writeWarmUp writes the warm-up file into dir, where a server is about to
// serve, and returns it.
func writeWarmUp(dir string) (dataFile, error) {
	f := dataFile{name: "warm-up-" + sizeName(warmUpSize) + ".bin", size: warmUpSize}
	f.path = filepath.Join(dir, f.name)
	var b bytes.Buffer
	writeRandom(&b, warmUpSize)
	return f, os.WriteFile(f.path, b.Bytes(), 0o644)
}

// sparse makes a sparse file of size bytes: a hole, then one last byte.
func (d *dataSet) sparse(name string, size int64) (dataFile, error) {
	f := dataFile{name: name, path: filepath.Join(d.dir, name), size: size}
	if st, err := os.Stat(f.path); err == nil && st.Size() == size {
		return f, nil
	}
	out, err := os.Create(f.path)
	if err != nil {
		return f, err
	}
	_, err = out.WriteAt([]byte{'\n'}, size-1)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return f, err
}

// ctxWriter stops writing once ctx is done.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

// Write writes p, or fails with ctx's error once ctx is done.
func (c *ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// xorshift is the xorshift64* generator: fast, seeded, and its output does
// not compress.
type xorshift uint64

func (x *xorshift) next() uint64 {
	*x ^= *x >> 12
	*x ^= *x << 25
	*x ^= *x >> 27
	return uint64(*x) * 2685821657736338717
}

// Read fills p with pseudo-random bytes; it never fails.
func (x *xorshift) Read(p []byte) (int, error) {
	n := len(p)
	for len(p) >= 8 {
		binary.LittleEndian.PutUint64(p, x.next())
		p = p[8:]
	}
	if len(p) > 0 {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], x.next())
		copy(p, b[:])
	}
	return n, nil
}

// writeRandom writes size incompressible bytes.
func writeRandom(w io.Writer, size int64) error {
	x := xorshift(0x9e3779b97f4a7c15)
	_, err := io.CopyBuffer(w, io.LimitReader(&x, size), make([]byte, 1<<20))
	return err
}

// Pieces of the generated access log, in the combined format.
var (
	logPaths = []string{"/", "/index.html", "/api/v1/items", "/api/v1/items/%d", "/static/app.%x.js",
		"/static/style.%x.css", "/images/photo-%d.jpg", "/downloads/release-%d.tar.gz", "/login", "/search?q=item%d"}
	logAgents = []string{
		"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
		"curl/8.5.0", "Go-http-client/1.1", "python-requests/2.32.3",
	}
	logMethods = []string{"GET", "GET", "GET", "GET", "POST", "HEAD", "PUT"}
	logStatus  = []int{200, 200, 200, 200, 200, 304, 206, 301, 404, 500}
)

// writeLog writes size bytes of realistic access-log lines: varied
// addresses, paths, statuses and agents, compressing the way real logs do.
func writeLog(w io.Writer, size int64) error {
	x := xorshift(0x2545f4914f6cdd1d)
	t := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	buf := make([]byte, 0, 1<<20)
	var written int64
	for written < size {
		buf = buf[:0]
		for len(buf) < cap(buf)-512 {
			r := x.next()
			t = t.Add(time.Duration(r%40) * time.Millisecond)
			path := logPaths[r>>8%uint64(len(logPaths))]
			if strings.Contains(path, "%") {
				path = fmt.Sprintf(path, r>>20%5000)
			}
			buf = fmt.Appendf(buf, "10.%d.%d.%d - - [%s] \"%s %s HTTP/1.1\" %d %d \"-\" \"%s\"\n",
				r>>16&0xff, r>>24&0xff, r>>32&0xff, t.Format("02/Jan/2006:15:04:05 -0700"),
				logMethods[r>>40%uint64(len(logMethods))], path, logStatus[r>>44%uint64(len(logStatus))],
				r>>48%90000, logAgents[r>>56%uint64(len(logAgents))])
		}
		chunk := buf[:min(int64(len(buf)), size-written)]
		if _, err := w.Write(chunk); err != nil {
			return err
		}
		written += int64(len(chunk))
	}
	return nil
}

// warm reads a file through once so that it is resident in the page
// cache, and the figures that follow measure the server, not the disk.
func warm(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.CopyBuffer(io.Discard, f, make([]byte, 1<<20))
	return err
}

// fileSHA returns the hex sha256 of a file.
func fileSHA(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(h, f, make([]byte, 1<<20)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
