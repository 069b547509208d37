package lab

import (
	"context"
	"fmt"
	"io"
	"largo"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

var resumeScenario = &scenario{
	name:     "resume",
	caseHead: "cut at",
	about: func(s Settings) string {
		return fmt.Sprintf("A download of the %s file cut a little past half-way, then resumed by the %s client from the bytes it has (a Range request); the sha256 of the result is compared with the file's.", largo.FormatSize(s.Size), s.Client)
	},
	cases: func(Config) []string { return []string{"half"} },
	columns: []column{
		{key: "status", head: "resume answer", text: true},
		{key: "first_mib", head: "first part MiB", digits: 1},
		{key: "resumed_mib", head: "resumed MiB", digits: 1},
		{key: "sha256", head: "sha256", text: true},
		colPeak,
	},
	run: runResume,
}

func runResume(ctx context.Context, r *runner, srv Server, _ string) Result {
	var res Result
	f := r.data.random
	one := r.single(ctx, srv, &res, false, 2*transferTimeout(f.size), f.path)
	if one == nil {
		return res
	}
	out := filepath.Join(one.scratch, f.name)
	cut := f.size/2 + 4099
	if err := firstPart(one.ctx, one.in.base+f.name, out, cut); err != nil {
		res.fail(fmt.Errorf("first part: %v", err))
		one.end(r, &res, 0)
		return res
	}
	res.set("first_mib", mib(cut))
	fr := one.cl.fetch(one.ctx, fetchReq{url: one.in.base + f.name, out: out, resume: true})
	res.set("resumed_mib", mib(fr.bytes))
	if fr.status != 0 {
		res.note("status", fmt.Sprintf("%d %s", fr.status, http.StatusText(fr.status)))
	}
	switch {
	case fr.err != nil:
		res.fail(fmt.Errorf("resume failed: %v", fr.err))
	case fr.status == http.StatusOK:
		res.fail(fmt.Errorf("no resume: the server ignored the range and sent all %s again", mb(fr.bytes)))
	case fr.status != http.StatusPartialContent:
		res.fail(fmt.Errorf("resume answered %d", fr.status))
	case fr.bytes != f.size-cut:
		res.fail(fmt.Errorf("resume sent %s; %s were missing", mb(fr.bytes), mb(f.size-cut)))
	}
	if fr.err != nil {
		res.note("sha256", "incomplete")
	} else if sum, err := fileSHA(out); err != nil {
		res.note("sha256", "unreadable")
	} else if sum == f.sha {
		res.note("sha256", "match")
	} else {
		res.note("sha256", "MISMATCH")
		res.fail(fmt.Errorf("the resumed file differs from the original"))
	}
	one.end(r, &res, 0)
	return res
}

// firstPart starts a download and stops it after n bytes, written to out,
// as an interrupted download leaves its file.
func firstPart(ctx context.Context, url, out string, n int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	tr := &http.Transport{DisableCompression: true, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("answered %d", resp.StatusCode)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	_, err = io.CopyN(f, resp.Body, n)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

var uploadScenario = &scenario{
	name:     "upload",
	caseHead: "file",
	about: func(s Settings) string {
		return fmt.Sprintf("One PUT of the %s file into an empty folder, by the %s client, for the servers that accept uploads; the stored file's sha256 is checked.", largo.FormatSize(s.Size), s.Client)
	},
	cases: func(cfg Config) []string { return []string{sizeName(cfg.Size)} },
	columns: []column{
		{key: "status", head: "answer", text: true},
		colWall, colMBps, colIdle, colPeak, colAbove, colCPUPerGiB,
		{key: "stored", head: "stored file", text: true},
	},
	run: runUpload,
}

func runUpload(ctx context.Context, r *runner, srv Server, _ string) Result {
	var res Result
	f := r.data.random
	one := r.single(ctx, srv, &res, true, transferTimeout(f.size), f.path)
	if one == nil {
		return res
	}
	const name = "upload.bin"
	start := time.Now()
	fr := one.cl.fetch(one.ctx, fetchReq{method: http.MethodPut, url: one.in.base + name, upload: f.path})
	wall := time.Since(start)
	if fr.status != 0 {
		res.note("status", fmt.Sprintf("%d %s", fr.status, http.StatusText(fr.status)))
	}
	var moved int64
	switch {
	case fr.status >= 200 && fr.status < 300:
		moved = f.size
		res.set(keyWall, wall.Seconds())
		res.set(keyMBps, float64(f.size)/1e6/wall.Seconds())
		sum, err := fileSHA(filepath.Join(one.scratch, name))
		switch {
		case err != nil:
			res.note("stored", "missing")
			res.fail(fmt.Errorf("answered %d but stored no file", fr.status))
		case sum != f.sha:
			res.note("stored", "DIFFERS")
			res.fail(fmt.Errorf("the stored file differs from the one sent"))
		default:
			res.note("stored", "intact")
		}
	case fr.status == 400 || fr.status == 403 || fr.status == 404 || fr.status == 405 || fr.status == 501:
		res.fail(fmt.Errorf("%w (answered %d %s)", errUnsupported, fr.status, http.StatusText(fr.status)))
	case fr.err != nil:
		res.fail(fmt.Errorf("upload failed: %v", fr.err))
	default:
		res.fail(fmt.Errorf("answered %d %s", fr.status, http.StatusText(fr.status)))
	}
	one.end(r, &res, moved)
	return res
}
