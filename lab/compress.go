package lab

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// encodings are the Accept-Encoding values the compress scenario asks
// for, one at a time.
var encodings = []string{"identity", "gzip", "zstd", "br"}

var compressScenario = &scenario{
	name:     "compress",
	caseHead: "file, asked",
	about: func(Settings) string {
		return "A realistic access log and an incompressible file of the same size, each asked for with one Accept-Encoding. Wire MB is the body as sent; ratio is file size ÷ wire size; CPU s/GiB is per GiB of file. The body is decoded and checked against the file."
	},
	cases: func(Config) []string {
		var cs []string
		for _, f := range []string{"log", "random"} {
			for _, e := range encodings {
				cs = append(cs, f+" "+e)
			}
		}
		return cs
	},
	columns: []column{
		{key: "encoding", head: "Content-Encoding", text: true},
		{key: "wire_mb", head: "wire MB", digits: 1},
		{key: "ratio", head: "ratio", digits: 2},
		colWall,
		{key: keyMBps, head: "file MB/s", digits: 0},
		colCPU, colCPUPerGiB, colPeak,
		{key: "decoded", head: "body", text: true},
	},
	run: runCompress,
}

func runCompress(ctx context.Context, r *runner, srv Server, cs string) Result {
	var res Result
	kind, enc, _ := strings.Cut(cs, " ")
	f := r.data.small
	if kind == "log" {
		f = r.data.log
	}
	one := r.single(ctx, srv, &res, false, transferTimeout(f.size), f.path)
	if one == nil {
		return res
	}
	out := filepath.Join(one.scratch, "body")
	start := time.Now()
	fr := one.cl.fetch(one.ctx, fetchReq{url: one.in.base + f.name, header: []string{"Accept-Encoding", enc}, out: out})
	wall := time.Since(start)
	got := fr.encoding
	if got == "" {
		got = "identity"
	}
	res.note("encoding", got)
	res.set("wire_mb", float64(fr.bytes)/1e6)
	if fr.bytes > 0 {
		res.set("ratio", float64(f.size)/float64(fr.bytes))
	}
	res.set(keyWall, wall.Seconds())
	res.set(keyMBps, float64(f.size)/1e6/wall.Seconds())
	if err := fr.check(200, -1); err != nil {
		res.fail(err)
	} else if err := decodedMatches(out, got, f.sha); err != nil {
		res.note("decoded", "WRONG")
		res.fail(err)
	} else {
		res.note("decoded", "intact")
	}
	one.end(r, &res, f.size)
	return res
}

// decodedMatches decodes the body in path as encoding and compares its
// sha256 with want.
func decodedMatches(path, encoding, want string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var body io.Reader
	switch encoding {
	case "identity":
		body = f
	case "gzip":
		zr, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("gzip body: %v", err)
		}
		body = zr
	case "zstd":
		zr, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return fmt.Errorf("zstd body: %v", err)
		}
		defer zr.Close()
		body = zr
	case "br":
		body = brotli.NewReader(f)
	default:
		return fmt.Errorf("Content-Encoding %q: the lab cannot decode it", encoding)
	}
	h := sha256.New()
	if _, err := io.Copy(h, body); err != nil {
		return fmt.Errorf("decoding %s body: %v", encoding, err)
	}
	if hex.EncodeToString(h.Sum(nil)) != want {
		return fmt.Errorf("the decoded %s body differs from the file", encoding)
	}
	return nil
}
