//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"largo/proc"
)

// BenchmarkDAV measures WebDAV beside plain HTTP, through one largo
// process on a folder, in one run: a 1 GiB GET with curl (plain) and
// through rclone's webdav backend (dav), a 1 GiB PUT with curl (plain) and
// through rclone (dav), pairs in alternating order, and a PROPFIND of
// Depth 1 of a folder of 100,000 files. It reports each client's
// throughput and largo's CPU per GiB for it, their ratio, and largo's peak
// RSS above idle. Run it alone, the machine otherwise quiet:
//
//	go test -tags e2e ./e2e -run '^$' -bench DAV -benchtime 3x
func BenchmarkDAV(b *testing.B) {
	curl, rclone := need(b, "curl"), need(b, "rclone")
	const size = 1 << 30
	dir := b.TempDir()
	src := filepath.Join(b.TempDir(), "src.bin")
	writeRandom(b, src, size, 50)
	if err := os.Link(src, filepath.Join(dir, "bench.bin")); err != nil {
		b.Fatal(err)
	}
	s := startWriter(b, dir, "--webdav")
	env := append(os.Environ(),
		"RCLONE_CONFIG_DAV_TYPE=webdav",
		"RCLONE_CONFIG_DAV_URL="+s.URL,
		"RCLONE_CONFIG_DAV_VENDOR=other",
		"RCLONE_CONFIG_DAV_BEARER_TOKEN="+testToken,
		"RCLONE_CONFIG="+filepath.Join(b.TempDir(), "none.conf"),
	)
	auth := "Authorization: Bearer " + testToken
	type client struct{ plain, dav []string }
	cases := []struct {
		name string
		c    client
	}{
		{"get", client{
			plain: []string{curl, "-sf", "-o", "/dev/null", s.URL + "bench.bin"},
			dav:   []string{rclone, "cat", "dav:bench.bin"},
		}},
		{"put", client{
			plain: []string{curl, "-sf", "-H", auth, "-T", src, s.URL + "up-plain.bin"},
			dav:   []string{rclone, "copyto", "--ignore-times", src, "dav:up-dav.bin"},
		}},
	}
	for _, c := range cases {
		// Each iteration runs the plain client and the DAV client, in
		// turns that alternate which goes first, so that neither always
		// meets the other's writeback or cache.
		b.Run(c.name, func(b *testing.B) {
			var took [2]time.Duration
			var cpu [2]time.Duration
			run := func(i int, args []string) {
				cmd := exec.Command(args[0], args[1:]...)
				cmd.Env = env
				var stderr bytes.Buffer
				cmd.Stderr = &stderr // and stdout to /dev/null (rclone cat)
				cpu0, _ := proc.TreeCPU(s.PID)
				start := time.Now()
				if err := cmd.Run(); err != nil {
					b.Fatalf("%v: %v\n%s", args, err, stderr.String())
				}
				took[i] += time.Since(start)
				cpu1, _ := proc.TreeCPU(s.PID)
				cpu[i] += cpu1 - cpu0
			}
			idle, w := s.memory().RSS, s.watchPeak()
			b.SetBytes(2 * size)
			b.ResetTimer()
			for i := range b.N {
				if i%2 == 0 {
					run(0, c.c.plain)
					run(1, c.c.dav)
				} else {
					run(1, c.c.dav)
					run(0, c.c.plain)
				}
			}
			b.StopTimer()
			n := float64(b.N)
			for i, kind := range []string{"plain", "dav"} {
				b.ReportMetric(n*size/took[i].Seconds()/1e6, kind+"-MB/s")
				b.ReportMetric(cpu[i].Seconds()/n, kind+"-server-cpu-s/GiB")
			}
			b.ReportMetric(took[0].Seconds()/took[1].Seconds(), "dav/plain-throughput")
			b.ReportMetric(float64(w.peak()-idle)/(1<<20), "peak-above-idle-MiB")
		})
	}
	b.Run("propfind-100k", func(b *testing.B) {
		const n = 100000
		big := b.TempDir()
		for i := range n {
			if err := os.WriteFile(filepath.Join(big, fmt.Sprintf("file-%06d.dat", i)), nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		s := startWriter(b, big, "--webdav")
		propfind := func(depth string) {
			cmd := exec.Command(curl, "-sf", "-o", "/dev/null", "-X", "PROPFIND", "-H", "Depth: "+depth, "-H", auth, s.URL)
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("PROPFIND: %v\n%s", err, out)
			}
		}
		propfind("0")
		idle, w := s.idleRSS(), s.watchPeak()
		b.ResetTimer()
		for range b.N {
			propfind("1")
		}
		b.StopTimer()
		reportMemory(b, idle, w)
	})
}
