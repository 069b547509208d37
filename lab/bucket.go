package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"largo"
	"largo/internal/versitygw"
)

// bucketReaders is how many clients read the object at once.
const bucketReaders = 20

var bucketScenario = &scenario{
	name:     "bucket",
	caseHead: "case",
	about: func(s Settings) string {
		on := "versitygw (its posix backend, on loopback)"
		if s.BucketServer != "" {
			on = "the S3 server at " + s.BucketServer
		}
		return fmt.Sprintf("The %s file as an object of a bucket on %s, read by %d clients at once, then written by one. largo serves the bucket (--store s3://); the rclone peer is rclone's s3 backend talking to the same server directly, with no server between (rclone cat per reader, rclone copyto for the write), so for it only the rates are measured. Other servers do not take part.", largo.FormatSize(s.Size), on, bucketReaders)
	},
	cases:   func(Config) []string { return []string{fmt.Sprintf("read %d", bucketReaders), "write 1"} },
	columns: []column{colWall, colMBps, colCPUPerGiB, colIdle, colAbove},
	run:     runBucket,
}

// gateway is the S3 server of one bucket case, holding the warm-up file
// and the random file as objects.
type gateway struct {
	*versitygw.Server
	tmp string
}

func startGateway(ctx context.Context, r *runner) (*gateway, error) {
	if b := r.cfg.Bucket; b.Endpoint != "" {
		s, err := versitygw.Attach(b.Endpoint, b.AccessKey, b.SecretKey, b.Region)
		if err != nil {
			return nil, err
		}
		return fillGateway(ctx, r, &gateway{Server: s})
	}
	bin := versitygw.Find()
	if bin == "" {
		return nil, fmt.Errorf("%w: %s not found (scripts/test-deps installs it)", errUnsupported, versitygw.Program)
	}
	tmp, err := os.MkdirTemp("", "largo-bench-bucket-")
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(filepath.Join(tmp, "s3"), 0o755); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	s, err := versitygw.Start(bin, filepath.Join(tmp, "s3"), filepath.Join(tmp, "versitygw.log"), true)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return fillGateway(ctx, r, &gateway{Server: s, tmp: tmp})
}

// fillGateway puts the warm-up file and the random file into g's bucket.
func fillGateway(ctx context.Context, r *runner, g *gateway) (*gateway, error) {
	for _, f := range []dataFile{r.data.warmUp, r.data.random} {
		if err := g.put(ctx, f); err != nil {
			g.stop()
			return nil, fmt.Errorf("putting %s: %v", f.name, err)
		}
	}
	return g, nil
}

// put stores f under its name through the S3 API, with the type an
// uploading client gives it.
func (g *gateway) put(ctx context.Context, f dataFile) error {
	file, err := os.Open(f.path)
	if err != nil {
		return err
	}
	defer file.Close()
	_, err = g.Client.PutObject(ctx, &awss3.PutObjectInput{
		Bucket: &g.Bucket, Key: aws.String(f.name), Body: file,
		ContentLength: aws.Int64(f.size), ContentType: aws.String("application/octet-stream"),
	})
	return err
}

// size returns the size of the object at key.
func (g *gateway) size(ctx context.Context, key string) (int64, error) {
	out, err := g.Client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &g.Bucket, Key: &key})
	if err != nil {
		return 0, err
	}
	return aws.ToInt64(out.ContentLength), nil
}

func (g *gateway) stop() {
	g.Stop()
	if g.tmp != "" {
		os.RemoveAll(g.tmp)
	}
}

func runBucket(ctx context.Context, r *runner, srv Server, cs string) Result {
	var res Result
	largoServer := srv.Name == "largo" && strings.Contains(srv.Command, "{exe} serve")
	if !largoServer && srv.Name != "rclone" {
		res.fail(fmt.Errorf("%w: the lab uses a bucket through largo, or directly with rclone", errUnsupported))
		return res
	}
	g, err := startGateway(ctx, r)
	if err != nil {
		res.fail(err)
		return res
	}
	defer g.stop()
	read := strings.HasPrefix(cs, "read")
	f := r.data.random
	if !largoServer {
		runRclone(ctx, g, f, read, &res)
		return res
	}

	// largo serving the bucket, its credentials in its environment.
	s3srv := Server{
		Name:      srv.Name,
		Command:   envPrefix(g.Env()) + "exec {exe} serve --store s3://" + g.Bucket + "/ --listen 127.0.0.1:0 --digest-rate 0 --upload --upload-open",
		PrintsURL: true,
	}
	scratch, err := os.MkdirTemp("", "largo-bench-scratch-")
	if err != nil {
		res.fail(fmt.Errorf("lab: %v", err))
		return res
	}
	defer os.RemoveAll(scratch)
	in, idle := r.begin(ctx, s3srv, scratch, false, &res)
	if in == nil {
		return res
	}
	if read {
		cl := r.client(bucketReaders)
		defer cl.close()
		tctx, cancel := context.WithTimeout(ctx, transferTimeout(f.size*bucketReaders))
		defer cancel()
		start := time.Now()
		results := parallel(bucketReaders, func(int) fetchResult { return cl.fetch(tctx, fetchReq{url: in.base + f.name}) })
		wall := time.Since(start)
		var sent int64
		errs := make([]error, len(results))
		for i, fr := range results {
			sent += fr.bytes
			errs[i] = fr.check(http.StatusOK, f.size)
		}
		res.set(keyWall, wall.Seconds())
		res.set(keyMBps, float64(sent)/1e6/wall.Seconds())
		res.fail(firstErr(errs))
		r.end(in, idle, &res, sent)
		return res
	}
	cl := r.client(1)
	defer cl.close()
	tctx, cancel := context.WithTimeout(ctx, transferTimeout(f.size))
	defer cancel()
	const key = "up-largo.bin"
	start := time.Now()
	fr := cl.fetch(tctx, fetchReq{method: http.MethodPut, url: in.base + key, upload: f.path})
	wall := time.Since(start)
	var moved int64
	switch {
	case fr.err != nil:
		res.fail(fmt.Errorf("upload failed: %v", fr.err))
	case fr.status < 200 || fr.status > 299:
		res.fail(fmt.Errorf("answered %d %s", fr.status, http.StatusText(fr.status)))
	default:
		moved = f.size
		res.set(keyWall, wall.Seconds())
		res.set(keyMBps, float64(f.size)/1e6/wall.Seconds())
		if n, err := g.size(ctx, key); err != nil || n != f.size {
			res.fail(fmt.Errorf("the stored object has %d of %d bytes (%v)", n, f.size, err))
		}
	}
	r.end(in, idle, &res, moved)
	return res
}

// runRclone reads the object with rclone cat from bucketReaders processes
// at once, or writes it with one rclone copyto, straight to the gateway.
func runRclone(ctx context.Context, g *gateway, f dataFile, read bool, res *Result) {
	bin, err := exec.LookPath("rclone")
	if err != nil {
		res.fail(fmt.Errorf("%w: rclone not found (apt-get install rclone)", errUnsupported))
		return
	}
	// Only this server's settings: an AWS_ or RCLONE_ variable of the
	// machine's would change what rclone does.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "RCLONE_") {
			env = append(env, kv)
		}
	}
	env = append(env, "RCLONE_CONFIG=/dev/null", "RCLONE_S3_PROVIDER=Other",
		"RCLONE_S3_ENDPOINT="+g.Endpoint, "RCLONE_S3_REGION="+g.Region,
		"RCLONE_S3_ACCESS_KEY_ID="+g.AccessKey, "RCLONE_S3_SECRET_ACCESS_KEY="+g.SecretKey)
	remote := ":s3:" + g.Bucket + "/"
	n := 1
	if read {
		n = bucketReaders
	}
	tctx, cancel := context.WithTimeout(ctx, transferTimeout(f.size*int64(n)))
	defer cancel()
	const key = "up-rclone.bin"
	start := time.Now()
	errs := parallel(n, func(int) error {
		if !read {
			cmd := exec.CommandContext(tctx, bin, "copyto", f.path, remote+key)
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("rclone copyto: %v: %s", err, out)
			}
			return nil
		}
		cmd := exec.CommandContext(tctx, bin, "cat", remote+f.name)
		cmd.Env = env
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		got, _ := io.Copy(io.Discard, out)
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("rclone cat: %v", err)
		}
		if got != f.size {
			return fmt.Errorf("rclone cat: %d of %d bytes", got, f.size)
		}
		return nil
	})
	wall := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		res.fail(err)
		return
	}
	if !read {
		if got, err := g.size(ctx, key); err != nil || got != f.size {
			res.fail(fmt.Errorf("the stored object has %d of %d bytes (%v)", got, f.size, err))
			return
		}
	}
	res.set(keyWall, wall.Seconds())
	res.set(keyMBps, float64(f.size)*float64(n)/1e6/wall.Seconds())
}

// envPrefix writes the variables vars (NAME=value) as the prefix of a
// shell command, each value quoted.
func envPrefix(vars []string) string {
	var b strings.Builder
	for _, kv := range vars {
		name, value, _ := strings.Cut(kv, "=")
		b.WriteString(name + "=" + shellQuote(value) + " ")
	}
	return b.String()
}
