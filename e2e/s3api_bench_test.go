//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkS3APICopy sends a 1 GiB file through largo's S3 API on a
// folder with the aws CLI (aws s3 cp, in parts of 8 MiB, 10 at once, the
// CLI's defaults) and fetches it back the same way, and reports each
// way's throughput and largo's peak RSS above idle over both: parts
// stream into the staging and out by sendfile, so the peak must not
// grow with the file or with the parts in flight. Run it alone, the
// machine otherwise quiet:
//
//	go test -tags e2e ./e2e -run '^$' -bench S3APICopy -benchtime 3x
func BenchmarkS3APICopy(b *testing.B) {
	const size = 1 << 30
	aws := awsCLI(b)
	src := filepath.Join(b.TempDir(), "src.bin")
	writeRandom(b, src, size, 33)
	for _, way := range []string{"up", "down"} {
		b.Run(way, func(b *testing.B) {
			g := &target{kind: "disk", dir: b.TempDir()}
			s := startS3API(b, g)
			env := clientEnv(b, aliceKey)
			ep := []string{"--endpoint-url", s.S3, "--only-show-errors", "s3", "cp"}
			if way == "down" {
				runTool(b, env, aws, append(ep, src, "s3://largo/bench.bin")...)
			}
			dst := filepath.Join(b.TempDir(), "dst.bin")
			get(b, s.URL+"_largo/healthz")
			idle, w := s.idleRSS(), s.watchPeak()
			b.SetBytes(size)
			b.ResetTimer()
			for range b.N {
				if way == "up" {
					runTool(b, env, aws, append(ep, src, "s3://largo/bench.bin")...)
				} else {
					runTool(b, env, aws, append(ep, "s3://largo/bench.bin", dst)...)
					os.Remove(dst)
				}
			}
			b.StopTimer()
			reportMemory(b, idle, w)
		})
	}
}
