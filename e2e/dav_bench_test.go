package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"largo/proc"
)

// BenchmarkDAV measures WebDAV beside plain HTTP, each through the same
// fresh largo process on a folder, in one run: a 1 GiB GET with curl
// (plain) and through rclone's webdav backend (dav), a 1 GiB PUT with
// curl (plain) and through rclone (dav), and a PROPFIND of Depth 1 of a
// folder of 100,000 files. It reports throughput, largo's CPU per GiB, and
// its peak RSS above idle. Run it alone, the machine otherwise quiet:
//
//	go test ./e2e -run '^$' -bench DAV -benchtime 3x
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
	cases := []struct {
		name string
		args []string
	}{
		{"get/plain", []string{curl, "-sf", "-o", "/dev/null", s.URL + "bench.bin"}},
		{"get/dav", []string{rclone, "cat", "dav:bench.bin", "--output", "/dev/null"}},
		{"put/plain", []string{curl, "-sf", "-H", auth, "-T", src, s.URL + "up-plain.bin"}},
		{"put/dav", []string{rclone, "copyto", "--ignore-times", src, "dav:up-dav.bin"}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			run := func() {
				cmd := exec.Command(c.args[0], c.args[1:]...)
				cmd.Env = env
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %v\n%s", c.args, err, out)
				}
			}
			idle, w := s.memory().RSS, s.watchPeak()
			cpu0, _ := proc.TreeCPU(s.PID)
			b.SetBytes(size)
			b.ResetTimer()
			for range b.N {
				run()
			}
			b.StopTimer()
			cpu1, _ := proc.TreeCPU(s.PID)
			b.ReportMetric((cpu1-cpu0).Seconds()/float64(b.N), "server-cpu-s/GiB")
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
		time.Sleep(200 * time.Millisecond)
		idle, w := s.memory().RSS, s.watchPeak()
		b.ResetTimer()
		for range b.N {
			propfind("1")
		}
		b.StopTimer()
		b.ReportMetric(float64(idle)/(1<<20), "idle-MiB")
		b.ReportMetric(float64(w.peak()-idle)/(1<<20), "peak-above-idle-MiB")
	})
}
