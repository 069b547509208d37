//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"largo/internal/testenv"
)

// The S3 API driven by the S3 clients people use, from Debian's
// packages: the aws CLI, boto3, rclone's s3 backend and restic, each
// signing with a user's S3 key of the access file, on a folder and on a
// bucket.

// clientEnv is the environment of a command-line S3 client signing with
// k: its credentials and region, and no configuration of the machine's.
func clientEnv(t testing.TB, k s3Key) []string {
	t.Helper()
	home := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "RCLONE_") && !strings.HasPrefix(kv, "RESTIC_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home, "AWS_ACCESS_KEY_ID="+k.id, "AWS_SECRET_ACCESS_KEY="+k.secret,
		"AWS_DEFAULT_REGION=us-east-1", "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE="+filepath.Join(home, "aws-config"), "AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(home, "aws-credentials"))
}

// runTool runs a client and fails t, with its output, when it fails.
func runTool(t testing.TB, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("%s %s: %v", filepath.Base(name), strings.Join(args[:min(len(args), 4)], " "), time.Since(start))
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, tail(string(out), 4096))
	}
	return string(out)
}

// awsCLI returns Debian's aws CLI, or the one on PATH.
func awsCLI(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/aws"); err == nil {
		return "/usr/bin/aws"
	}
	return need(t, "aws")
}

// treeSums returns the SHA-256 of each file below dir, by its name
// relative to dir; hidden names (the state area) are left out.
func treeSums(t testing.TB, dir string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != dir {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			sums[filepath.ToSlash(rel)] = fileSHA(t, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

// sameSums fails t when the trees of want and got differ.
func sameSums(t testing.TB, what string, want, got map[string]string) {
	t.Helper()
	if len(want) != len(got) {
		t.Errorf("%s: %d files, want %d", what, len(got), len(want))
	}
	for name, sum := range want {
		if got[name] != sum {
			t.Errorf("%s: %s differs or is missing", what, name)
		}
	}
}

// makeTree writes a small tree below dir: files of a few sizes, one
// above the clients' multipart thresholds, in folders, a name with a
// space.
func makeTree(t testing.TB, dir string, big int64) {
	t.Helper()
	writeRandom(t, filepath.Join(dir, "big.bin"), big, 7)
	for i := range 5 {
		writeRandom(t, filepath.Join(dir, "sub", fmt.Sprintf("f%d.txt", i)), int64(100+i*1000), uint64(i))
	}
	writeRandom(t, filepath.Join(dir, "sub", "deeper", "a file.dat"), 70_000, 11)
	writeRandom(t, filepath.Join(dir, "empty"), 0, 0)
}

// TestS3APIAWSCLI: the aws CLI copies a file above its multipart
// threshold up and down, syncs a tree both ways and with --delete,
// lists, and presigns a URL that any HTTP client can read until it
// expires.
func TestS3APIAWSCLI(t *testing.T) {
	aws := awsCLI(t)
	forEachTarget(t, func(t *testing.T, g *target) {
		s := startS3API(t, g)
		env := clientEnv(t, aliceKey)
		ep := []string{"--endpoint-url", s.S3, "--only-show-errors"}
		src := t.TempDir()
		makeTree(t, src, 20<<20)
		want := treeSums(t, src)

		runTool(t, env, aws, append(ep, "s3", "cp", filepath.Join(src, "big.bin"), "s3://largo/cli/big.bin")...)
		if got := fileSHA(t, filepath.Join(g.dir, "cli", "big.bin")); got != want["big.bin"] {
			t.Fatalf("the file the CLI sent in parts differs")
		}
		down := filepath.Join(t.TempDir(), "down.bin")
		runTool(t, env, aws, append(ep, "s3", "cp", "s3://largo/cli/big.bin", down)...)
		if fileSHA(t, down) != want["big.bin"] {
			t.Fatalf("the file the CLI fetched differs")
		}

		runTool(t, env, aws, append(ep, "s3", "sync", src, "s3://largo/tree/")...)
		sameSums(t, "synced up", want, treeSums(t, filepath.Join(g.dir, "tree")))
		back := t.TempDir()
		runTool(t, env, aws, append(ep, "s3", "sync", "s3://largo/tree/", back)...)
		sameSums(t, "synced down", want, treeSums(t, back))
		// A change and a removal, synced with --delete.
		writeRandom(t, filepath.Join(src, "sub", "f1.txt"), 5000, 99)
		os.Remove(filepath.Join(src, "sub", "f2.txt"))
		runTool(t, env, aws, append(ep, "s3", "sync", "--delete", src, "s3://largo/tree/")...)
		sameSums(t, "synced again with --delete", treeSums(t, src), treeSums(t, filepath.Join(g.dir, "tree")))

		ls := runTool(t, env, aws, "--endpoint-url", s.S3, "s3", "ls", "--recursive", "s3://largo/tree/")
		if !strings.Contains(ls, "tree/sub/deeper/a file.dat") || strings.Contains(ls, "f2.txt") {
			t.Errorf("aws s3 ls --recursive:\n%s", ls)
		}
		top := runTool(t, env, aws, "--endpoint-url", s.S3, "s3", "ls", "s3://largo/")
		if !strings.Contains(top, "PRE tree/") || !strings.Contains(top, "PRE cli/") {
			t.Errorf("aws s3 ls of the bucket:\n%s", top)
		}

		// A presigned URL: read by a plain HTTP client, refused once
		// expired; the same request unsigned is refused.
		url := strings.TrimSpace(runTool(t, env, aws, "--endpoint-url", s.S3, "s3", "presign", "s3://largo/cli/big.bin", "--expires-in", "600"))
		resp := get(t, url)
		sum, n := bodySHA(t, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || sum != want["big.bin"] || n != 20<<20 {
			t.Errorf("GET of the presigned URL: %d, %d bytes", resp.StatusCode, n)
		}
		if resp := get(t, s.S3+"largo/cli/big.bin"); resp.StatusCode != http.StatusForbidden {
			t.Errorf("the same GET unsigned: %d, want 403", resp.StatusCode)
		}
		short := strings.TrimSpace(runTool(t, env, aws, "--endpoint-url", s.S3, "s3", "presign", "s3://largo/cli/big.bin", "--expires-in", "1"))
		if !waitFor(10*time.Second, func() bool {
			resp := get(t, short)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode == http.StatusForbidden
		}) {
			t.Errorf("the presigned URL still works after it expired")
		}
		g.clean(t)
	})
}

// TestS3APIBoto3: a boto3 script (e2e/s3api_boto3.py) puts, reads, lists,
// copies, removes and sends a file in parts with upload_file.
func TestS3APIBoto3(t *testing.T) {
	py := ""
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import boto3").Run() == nil {
			py = p
			break
		}
	}
	if py == "" {
		testenv.Missing(t, "python3 with boto3 not found: install python3-boto3 (make test does) to run this test")
	}
	forEachTarget(t, func(t *testing.T, g *target) {
		s := startS3API(t, g)
		dir := t.TempDir()
		src := filepath.Join(dir, "src.bin")
		want := writeRandom(t, src, 12<<20, 5)
		out := runTool(t, clientEnv(t, aliceKey), py, "s3api_boto3.py", s.S3, src, filepath.Join(dir, "back.bin"))
		if !strings.Contains(out, "boto3: ok") {
			t.Fatalf("the script said:\n%s", out)
		}
		if fileSHA(t, filepath.Join(g.dir, "boto", "big.bin")) != want || fileSHA(t, filepath.Join(dir, "back.bin")) != want {
			t.Errorf("the file boto3 sent in parts, or fetched, differs")
		}
		g.clean(t)
	})
}

// TestS3APIRclone: rclone's s3 backend copies a tree (its large file in
// parts), syncs a change, and checks the copy against the source.
func TestS3APIRclone(t *testing.T) {
	rclone := need(t, "rclone")
	forEachTarget(t, func(t *testing.T, g *target) {
		s := startS3API(t, g)
		env := append(clientEnv(t, aliceKey), "RCLONE_CONFIG_LARGO_TYPE=s3", "RCLONE_CONFIG_LARGO_PROVIDER=Other",
			"RCLONE_CONFIG_LARGO_ENDPOINT="+s.S3, "RCLONE_CONFIG_LARGO_ACCESS_KEY_ID="+aliceKey.id,
			"RCLONE_CONFIG_LARGO_SECRET_ACCESS_KEY="+aliceKey.secret, "RCLONE_CONFIG_LARGO_REGION=us-east-1",
			"RCLONE_CONFIG_LARGO_FORCE_PATH_STYLE=true", "RCLONE_CONFIG=/dev/null")
		opts := []string{"--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M", "-q"}
		src := t.TempDir()
		makeTree(t, src, 17<<20)
		runTool(t, env, rclone, append([]string{"copy", src, "largo:largo/rc"}, opts...)...)
		sameSums(t, "rclone copy", treeSums(t, src), treeSums(t, filepath.Join(g.dir, "rc")))
		writeRandom(t, filepath.Join(src, "sub", "f3.txt"), 9000, 42)
		os.Remove(filepath.Join(src, "sub", "f4.txt"))
		runTool(t, env, rclone, append([]string{"sync", src, "largo:largo/rc"}, opts...)...)
		sameSums(t, "rclone sync", treeSums(t, src), treeSums(t, filepath.Join(g.dir, "rc")))
		runTool(t, env, rclone, "check", src, "largo:largo/rc", "-q")
		g.clean(t)
	})
}

// TestS3APIRestic: restic keeps a repository in the bucket: init, a
// backup of a tree, check with --read-data, and a restore that matches.
func TestS3APIRestic(t *testing.T) {
	restic := need(t, "restic")
	forEachTarget(t, func(t *testing.T, g *target) {
		s := startS3API(t, g)
		env := append(clientEnv(t, aliceKey), "RESTIC_REPOSITORY=s3:"+s.S3+"largo/restic", "RESTIC_PASSWORD=a test password",
			"RESTIC_CACHE_DIR="+t.TempDir())
		src := t.TempDir()
		makeTree(t, src, 24<<20)
		runTool(t, env, restic, "init", "-q")
		runTool(t, env, restic, "backup", "-q", src)
		runTool(t, env, restic, "check", "--read-data", "-q")
		dst := t.TempDir()
		runTool(t, env, restic, "restore", "latest", "--target", dst, "-q")
		sameSums(t, "restored", treeSums(t, src), treeSums(t, filepath.Join(dst, src)))
		g.clean(t)
	})
}
