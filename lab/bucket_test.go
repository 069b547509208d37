package lab

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"largo/internal/testenv"
	"largo/internal/versitygw"
)

// TestBucketRclone runs the bucket scenario's rclone side against a real
// versitygw: twenty readers and a writer, each figure present and the
// written object whole; a server other than largo and rclone does not
// take part. (largo's side runs in the end-to-end test of largo bench.)
func TestBucketRclone(t *testing.T) {
	if versitygw.Find() == "" {
		testenv.Missing(t, "%s not found: scripts/test-deps installs it", versitygw.Program)
	}
	testenv.Program(t, "rclone")
	r, dir, _ := warmUpRunner(t)
	f := dataFile{name: "random.bin", path: filepath.Join(dir, "random.bin"), size: 3<<20 + 5}
	out, err := os.Create(f.path)
	if err != nil {
		t.Fatal(err)
	}
	err = writeRandom(out, f.size)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	r.data.random = f
	rclone := Server{Name: "rclone", Command: presets["rclone"]().Command}
	for _, cs := range bucketScenario.cases(r.cfg) {
		res := runBucket(context.Background(), r, rclone, cs)
		if res.Outcome != "" && res.Outcome != OK {
			t.Fatalf("%s: %s", cs, res.Outcome)
		}
		if res.Values[keyMBps] <= 0 || res.Values[keyWall] <= 0 {
			t.Fatalf("%s: figures %v", cs, res.Values)
		}
	}
	res := runBucket(context.Background(), r, roleServer("stand-in", "serve"), "write 1")
	if !strings.HasPrefix(res.Outcome, errUnsupported.Error()) {
		t.Fatalf("a stand-in server in the bucket scenario: %q", res.Outcome)
	}
}

func TestEnvPrefix(t *testing.T) {
	got := envPrefix([]string{"A=plain", "B=it's $HOME", "C="})
	want := `A=plain B='it'\''s $HOME' C='' `
	if got != want {
		t.Fatalf("envPrefix = %q, want %q", got, want)
	}
}
