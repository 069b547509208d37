//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"largo/internal/poll"
	"largo/internal/versitygw"
	"largo/proc"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// s3Peer is one S3 server on a folder, as BenchmarkS3APIPeers measures
// it: where it answers, the bucket that is the folder, the key that signs
// for it, and its process.
type s3Peer struct {
	endpoint, bucket string
	key              s3Key
	pid              int
}

// memory returns the peer's RSS once settled, and a watch of its peak
// from then on: the baseline and the watch of a measurement.
func (p s3Peer) memory(b *testing.B) (idle int64, w *peakWatch) {
	idle = idleRSSOf(b, p.pid)
	m, err := proc.ReadMemory(p.pid)
	if err != nil {
		b.Fatal(err)
	}
	return idle, watchPeakOf(p.pid, m)
}

// s3PeerStarters start each S3 server the benchmark compares on the
// folder dir, in the order it measures them: largo, versitygw's posix
// back end, and rclone's serve s3 when the rclone found has it. A server
// that is not on the machine is skipped, and said.
var s3PeerStarters = []struct {
	name  string
	start func(b *testing.B, dir string) (s3Peer, bool)
}{
	{"largo", func(b *testing.B, dir string) (s3Peer, bool) {
		s := startS3API(b, &target{kind: "disk", dir: dir})
		return s3Peer{endpoint: strings.TrimSuffix(s.S3, "/"), bucket: "largo", key: aliceKey, pid: s.PID}, true
	}},
	{"versitygw", func(b *testing.B, dir string) (s3Peer, bool) {
		bin := versitygw.Find()
		if bin == "" {
			b.Log("versitygw is not installed (./scripts/test-deps)")
			return s3Peer{}, false
		}
		v, err := versitygw.Start(bin, dir, filepath.Join(b.TempDir(), "versitygw.log"), true)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(v.Stop)
		return s3Peer{endpoint: v.Endpoint, bucket: v.Bucket, key: s3Key{v.AccessKey, v.SecretKey}, pid: v.PID}, true
	}},
	{"rclone", func(b *testing.B, dir string) (s3Peer, bool) {
		bin := rcloneServeS3()
		if bin == "" {
			b.Log("no rclone with serve s3 (1.65 or later; LARGO_RCLONE names one)")
			return s3Peer{}, false
		}
		return startRcloneS3(b, bin, dir), true
	}},
}

// rcloneServeS3 returns an rclone that has serve s3: $LARGO_RCLONE, or
// the one on PATH; "" for none.
func rcloneServeS3() string {
	bin := os.Getenv("LARGO_RCLONE")
	if bin == "" {
		bin, _ = exec.LookPath("rclone")
	}
	if bin == "" {
		return ""
	}
	// An rclone without it answers with the help of serve, and exit 0.
	out, err := exec.Command(bin, "serve", "s3", "--help").Output()
	if err != nil || !bytes.Contains(out, []byte("--auth-key")) {
		return ""
	}
	return bin
}

// startRcloneS3 runs rclone serve s3 over dir, whose folder "bench" is
// the bucket, and returns once it answers; it is stopped at the end of b.
func startRcloneS3(b *testing.B, bin, dir string) s3Peer {
	addr, err := versitygw.FreeAddr()
	if err != nil {
		b.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "bench"), 0o755); err != nil {
		b.Fatal(err)
	}
	key := s3Key{"RCLONEBENCH000000001", "rclone-bench-secret-0123456789abcdefghij"}
	var out bytes.Buffer
	cmd := exec.Command(bin, "serve", "s3", "--addr", addr, "--auth-key", key.id+","+key.secret, dir)
	cmd.Env = append(os.Environ(), "RCLONE_CONFIG="+filepath.Join(b.TempDir(), "none.conf"))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if !poll.Until(20*time.Second, 50*time.Millisecond, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		b.Fatalf("rclone serve s3 did not answer in 20s\n%s", out.String())
	}
	return s3Peer{endpoint: "http://" + addr, bucket: "bench", key: key, pid: cmd.Process.Pid}
}

// s3BenchSize is the size of BenchmarkS3APIPeers' large file:
// $LARGO_S3_BENCH_GIB GiB, 1 by default.
func s3BenchSize(b *testing.B) int64 {
	gib := int64(1)
	if v := os.Getenv("LARGO_S3_BENCH_GIB"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			b.Fatalf("LARGO_S3_BENCH_GIB=%q: a whole number of GiB", v)
		}
		gib = n
	}
	return gib << 30
}

// BenchmarkS3APIPeers measures largo's S3 API beside the S3 servers a
// user may run on a folder instead (versitygw, rclone serve s3), each a
// fresh process on a fresh folder, one after the other in one run:
//
//   - up, down: the aws CLI's s3 cp of one large file (1 GiB, or
//     $LARGO_S3_BENCH_GIB; parts of 8 MiB, 10 at once), reporting MB/s and
//     the server's peak RSS above its idle;
//   - small: 1,000 objects of 4 KiB put by 16 clients of aws-sdk-go-v2 at
//     once, then listed in pages of 1,000, reporting puts per second.
//
// $LARGO_S3_PEERS (largo,versitygw,rclone) names the servers to measure:
// rclone serve s3 holds an upload in memory, about twice its size, so a
// run of 10 GiB leaves it out on a machine of 24 GiB.
//
// Run it with the machine otherwise quiet:
//
//	go test -tags e2e ./e2e -run '^$' -bench S3APIPeers -benchtime 1x -count 3
func BenchmarkS3APIPeers(b *testing.B) {
	size := s3BenchSize(b)
	aws := awsCLI(b)
	src := filepath.Join(b.TempDir(), "src.bin")
	var once sync.Once
	for _, way := range []string{"up", "down", "small"} {
		b.Run(way, func(b *testing.B) {
			for _, p := range s3PeerStarters {
				if only := os.Getenv("LARGO_S3_PEERS"); only != "" && !slices.Contains(strings.Split(only, ","), p.name) {
					continue
				}
				b.Run(p.name, func(b *testing.B) {
					peer, ok := p.start(b, b.TempDir())
					if !ok {
						b.Skip()
					}
					if way == "small" {
						benchSmallObjects(b, peer)
						return
					}
					once.Do(func() { writeRandom(b, src, size, 35) })
					env := clientEnv(b, peer.key)
					// No read timeout: a server that answers a Complete
					// only once it has joined the parts (versitygw) takes
					// longer than the CLI's 60 s for 10 GiB, and the CLI's
					// retry of it fails.
					cp := []string{"--endpoint-url", peer.endpoint, "--only-show-errors", "--cli-read-timeout", "0", "s3", "cp"}
					obj := "s3://" + peer.bucket + "/bench.bin"
					if way == "down" {
						runTool(b, env, aws, append(cp, src, obj)...)
					}
					dst := filepath.Join(b.TempDir(), "dst.bin")
					idle, w := peer.memory(b)
					b.SetBytes(size)
					b.ResetTimer()
					for range b.N {
						if way == "up" {
							runTool(b, env, aws, append(cp, src, obj)...)
						} else {
							runTool(b, env, aws, append(cp, obj, dst)...)
							os.Remove(dst)
						}
					}
					b.StopTimer()
					reportMemory(b, idle, w)
				})
			}
		})
	}
}

// benchSmallObjects puts 1,000 objects of 4 KiB into peer's bucket, 16 at
// a time, and lists them, b.N times, reporting puts per second, the
// listing's time and the peak RSS above idle.
func benchSmallObjects(b *testing.B, peer s3Peer) {
	const objects, clients = 1000, 16
	c := s3Client(peer.endpoint, peer.key, nil)
	body := bytes.Repeat([]byte("4 KiB of text.\n"), 4096/15+1)[:4096]
	ctx := context.Background()
	idle, w := peer.memory(b)
	var put, list time.Duration
	b.ResetTimer()
	for n := range b.N {
		start := time.Now()
		keys := make(chan string)
		errs := make(chan error, clients)
		var wg sync.WaitGroup
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range keys {
					if _, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: &peer.bucket, Key: aws.String(k), Body: bytes.NewReader(body)}); err != nil {
						errs <- fmt.Errorf("PutObject %s: %w", k, err)
						return
					}
				}
			}()
		}
	send:
		for i := range objects {
			select {
			case keys <- fmt.Sprintf("run%d/d%02d/obj%04d", n, i%20, i):
			case err := <-errs:
				b.Error(err)
				break send
			}
		}
		close(keys)
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		put += time.Since(start)
		start = time.Now()
		listed := 0
		pages := awss3.NewListObjectsV2Paginator(c, &awss3.ListObjectsV2Input{Bucket: &peer.bucket, Prefix: aws.String(fmt.Sprintf("run%d/", n))})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				b.Fatalf("ListObjectsV2: %v", err)
			}
			listed += len(page.Contents)
		}
		list += time.Since(start)
		if listed != objects {
			b.Fatalf("listed %d objects; put %d", listed, objects)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(objects*b.N)/put.Seconds(), "puts/s")
	b.ReportMetric(float64(list.Milliseconds())/float64(b.N), "list-ms")
	reportMemory(b, idle, w)
}

// BenchmarkS3APIRestic backs up a tree through largo's S3 API on a
// folder with restic, checks the repository reading every pack (check
// --read-data), restores it and compares every file: a tree of
// $LARGO_S3_BENCH_GIB GiB (1 by default) in files of 256 MiB, and 1,000
// small files in 50 folders. It reports each step's seconds and largo's
// peak RSS above idle over all of them:
//
//	LARGO_S3_BENCH_GIB=5 go test -tags e2e ./e2e -run '^$' -bench S3APIRestic -benchtime 1x
func BenchmarkS3APIRestic(b *testing.B) {
	restic := need(b, "restic")
	size := s3BenchSize(b)
	src := b.TempDir()
	for i := range size / (256 << 20) {
		writeRandom(b, filepath.Join(src, "big", fmt.Sprintf("part%03d.bin", i)), 256<<20, uint64(100+i))
	}
	for i := range 1000 {
		writeRandom(b, filepath.Join(src, "small", fmt.Sprintf("d%02d", i%50), fmt.Sprintf("f%04d.dat", i)), int64(1+i*61%65536), uint64(5000+i))
	}
	want := treeSums(b, src)
	for range b.N {
		s := startS3API(b, &target{kind: "disk", dir: b.TempDir()})
		env := append(clientEnv(b, aliceKey), "RESTIC_REPOSITORY=s3:"+s.S3+"largo/restic", "RESTIC_PASSWORD=a bench password",
			"RESTIC_CACHE_DIR="+b.TempDir())
		idle, w := s.idleRSS(), s.watchPeak()
		step := func(metric string, args ...string) {
			start := time.Now()
			runTool(b, env, restic, args...)
			b.ReportMetric(time.Since(start).Seconds(), metric)
		}
		step("init-s", "init", "-q")
		step("backup-s", "backup", "-q", src)
		step("check-read-data-s", "check", "--read-data", "-q")
		dst := b.TempDir()
		step("restore-s", "restore", "latest", "--target", dst, "-q")
		reportMemory(b, idle, w)
		sameSums(b, "restored", want, treeSums(b, filepath.Join(dst, src)))
	}
}
