//go:build e2e

package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"largo/internal/poll"
	"largo/s3/s3test"
)

// Three replicas of one bucket behind nginx (round robin, no affinity),
// one of them killed with SIGKILL while uploads and downloads run through
// it, and started again.

const replicasAccess = `
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]
quota = "4GiB"

[[rule]]
path = "/"
users = ["alice"]
allow = ["all"]
`

// replicaSet is the three largo processes serving one bucket on fixed
// loopback ports, so that one killed is started again where the balancer
// expects it.
type replicaSet struct {
	t     *testing.T
	srv   *s3test.Server
	addrs []string
	args  []string
	s     []*server
}

func (rs *replicaSet) start(i int) {
	rs.t.Helper()
	args := append([]string{"serve", "--store", "s3://" + rs.srv.Bucket + "/", "--listen", rs.addrs[i], adminListen, "127.0.0.1:0"}, rs.args...)
	rs.s[i] = startLargo(rs.t, args, rs.srv.Env())
}

// sum is a metric's sum over the replicas, and each one's value.
func (rs *replicaSet) sum(name string) (float64, []float64) {
	rs.t.Helper()
	var total float64
	each := make([]float64, len(rs.s))
	for i, s := range rs.s {
		each[i] = metric(rs.t, s, name)
		total += each[i]
	}
	return total, each
}

// landed waits until one replica's metric has grown by at least min
// since base, and returns that replica: the one a request held midway
// went to, when nothing else moves the metric meanwhile.
func (rs *replicaSet) landed(name string, base []float64, min float64) int {
	rs.t.Helper()
	at := -1
	poll.Wait(rs.t, 20*time.Second, "a held request to reach a replica ("+name+")", func() bool {
		_, now := rs.sum(name)
		for i := range now {
			if now[i]-base[i] >= min {
				at = i
				return true
			}
		}
		return false
	})
	return at
}

// startBalancer runs nginx on a loopback port in front of backends
// (upstream round robin, bodies streamed both ways, a backend that failed
// tried again after a second), and returns its base URL.
func startBalancer(t *testing.T, backends []string) string {
	t.Helper()
	var ups strings.Builder
	for _, b := range backends {
		fmt.Fprintf(&ups, "\t\tserver %s max_fails=1 fail_timeout=1s;\n", b)
	}
	return runNginx(t, func(prefix, addr string) string {
		return fmt.Sprintf(`
	proxy_temp_path %[1]s/proxy;
	upstream replicas {
%[2]s	}
	server {
		listen %[3]s;
		client_max_body_size 0;
		proxy_request_buffering off;
		proxy_buffering off;
		proxy_http_version 1.1;
		proxy_set_header Host $http_host;
		proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
		proxy_set_header X-Forwarded-Proto $scheme;
		proxy_set_header Connection "";
		location / { proxy_pass http://replicas; }
	}
`, prefix, ups.String(), addr)
	})
}

// heldBody sends its first hold bytes, then waits until open is closed
// before it sends the rest.
type heldBody struct {
	r    io.Reader
	hold int64
	open <-chan struct{}
}

func (b *heldBody) Read(p []byte) (int, error) {
	if b.hold == 0 {
		<-b.open
		b.hold = -1
	}
	if b.hold > 0 && int64(len(p)) > b.hold {
		p = p[:b.hold]
	}
	n, err := b.r.Read(p)
	if b.hold > 0 {
		b.hold -= int64(n)
	}
	return n, err
}

// call sends a request and returns its status, or an error for one cut
// on the way.
func call(method, url string, body io.Reader, size int64, hdr ...string) (*http.Response, error) {
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return nil, err
	}
	req.ContentLength = size
	if body == nil {
		req.Body = http.NoBody
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, err
}

// faultUpload is a resumable upload whose second request is held
// midway: tus or IETF, with the offset asked and the rest sent again
// after a failure, through whatever replica the balancer picks.
type faultUpload struct {
	ietf   bool
	name   string
	data   []byte
	url    string // the upload's
	on     int    // the replica its held request went to
	done   chan error
	resume int64 // the offset the upload resumed from after a cut, or -1
}

var aliceAuth = []string{"Authorization", tokenOf("alice")}

// uploadHeaders are a request's fields for the upload's protocol.
func (u *faultUpload) headers(offset int64, complete bool) []string {
	if u.ietf {
		return append(appendHeaders(offset, complete), aliceAuth...)
	}
	return append([]string{"Tus-Resumable", "1.0.0", "Upload-Offset", strconv.FormatInt(offset, 10),
		"Content-Type", "application/offset+octet-stream"}, aliceAuth...)
}

// headHeaders are the fields of a request for the upload's offset.
func (u *faultUpload) headHeaders() []string {
	if u.ietf {
		return append(ietfHeaders(), aliceAuth...)
	}
	return append([]string{"Tus-Resumable", "1.0.0"}, aliceAuth...)
}

// create creates the upload with its first part of part bytes through
// lb.
func (u *faultUpload) create(t *testing.T, lb string, part int64) {
	t.Helper()
	u.resume = -1
	// An IETF upload is created without a body: behind nginx, which
	// passes on no 104, one begun with its bytes cannot be resumed
	// (docs/deploy.md).
	if u.ietf {
		resp, _ := send(t, "PUT", lb+u.name, nil, 0,
			append(ietfHeaders("Upload-Complete", "?0", "Upload-Length", strconv.Itoa(len(u.data))), aliceAuth...)...)
		if resp.StatusCode != 201 || resp.Header.Get("Location") == "" {
			t.Fatalf("IETF creation of %s: %s", u.name, resp.Status)
		}
		u.url = lb + strings.TrimPrefix(resp.Header.Get("Location"), "/")
	} else {
		url, resp := tusCreateAt(t, lb, int64(len(u.data)), u.name, aliceAuth...)
		if resp.StatusCode != 201 {
			t.Fatalf("tus creation of %s: %s", u.name, resp.Status)
		}
		u.url = url
	}
	if resp, err := call("PATCH", u.url, bytes.NewReader(u.data[:part]), part, u.headers(0, false)...); err != nil || resp.StatusCode != 204 {
		t.Fatalf("the first append to %s: %v %v", u.name, err, resp)
	}
}

// begin sends the rest of the upload from offset in the background, held
// after hold bytes until open is closed, resumed as often as needed; done
// receives the outcome.
func (u *faultUpload) begin(offset, hold int64, open <-chan struct{}) {
	u.done = make(chan error, 1)
	go func() { u.done <- u.send(offset, hold, open) }()
}

// send sends the upload from offset on, the first request held, and
// resumes it from the offset the server reports while it fails.
func (u *faultUpload) send(offset, hold int64, open <-chan struct{}) error {
	size := int64(len(u.data))
	var body io.Reader = &heldBody{r: bytes.NewReader(u.data[offset:]), hold: hold, open: open}
	for try := 0; ; try++ {
		resp, err := call("PATCH", u.url, body, size-offset, u.headers(offset, true)...)
		want := 204
		if u.ietf {
			want = 201
		}
		if err == nil && resp.StatusCode == want {
			return nil
		}
		if try == 10 {
			return fmt.Errorf("%s: still failing after %d tries: %v %v", u.name, try, err, resp)
		}
		// Where the upload stands now, through any replica.
		var at int64 = -1
		if !poll.Until(20*time.Second, 100*time.Millisecond, func() bool {
			resp, err := call("HEAD", u.url, nil, 0, u.headHeaders()...)
			if err != nil || resp.StatusCode/100 != 2 {
				return false
			}
			at, err = strconv.ParseInt(resp.Header.Get("Upload-Offset"), 10, 64)
			return err == nil
		}) {
			return fmt.Errorf("%s: no offset after a failed append (%v %v)", u.name, err, resp)
		}
		if u.resume < 0 {
			u.resume = at
		}
		offset = at
		body = bytes.NewReader(u.data[offset:])
	}
}

// tusCreateAt creates a tus upload of size bytes named name through the
// base URL base.
func tusCreateAt(t *testing.T, base string, size int64, name string, hdr ...string) (string, *http.Response) {
	t.Helper()
	meta := "filename " + b64(name)
	resp, _ := send(t, "POST", base+"_largo/uploads/", nil, 0, append([]string{"Tus-Resumable", "1.0.0",
		"Upload-Length", strconv.FormatInt(size, 10), "Upload-Metadata", meta}, hdr...)...)
	return resp.Header.Get("Location"), resp
}

// heldDownload is a download that reads hold bytes, then waits until
// open is closed, then reads on, resuming with a range under If-Range
// after a cut (counted in resumed); done receives its digest.
func heldDownload(url string, hold int64, open <-chan struct{}, done chan<- string, resumed *atomic.Int32) {
	var got bytes.Buffer
	etag := ""
	var resp *http.Response
	var err error
	for try := 0; try < 10; try++ {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set(aliceAuth[0], aliceAuth[1])
		if got.Len() > 0 {
			resumed.Add(1)
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-", got.Len()))
			req.Header.Set("If-Range", etag)
		}
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			time.Sleep(100 * time.Millisecond) // the balancer's next try
			continue
		}
		if got.Len() > 0 && resp.StatusCode != 206 || got.Len() == 0 && resp.StatusCode != 200 {
			resp.Body.Close()
			done <- fmt.Sprintf("status %d at offset %d", resp.StatusCode, got.Len())
			return
		}
		etag = resp.Header.Get("ETag")
		if hold > 0 {
			io.CopyN(&got, resp.Body, hold)
			hold = 0
			<-open
		}
		_, err = io.Copy(&got, resp.Body)
		resp.Body.Close()
		if err == nil {
			done <- sha256hex(got.Bytes())
			return
		}
	}
	done <- fmt.Sprintf("still cut after 10 tries at %d bytes: %v", got.Len(), err)
}

// TestReplicasFaults serves one bucket from three largo processes behind
// nginx and kills one of them with SIGKILL while a tus upload, an IETF
// upload and a download each have a request held midway on it, and while
// `largo put -j 8` sends its pieces through all three; then starts it
// again. Every upload resumes from the offset the bucket holds through
// another replica, every file arrives whole, no upload's lease or state
// is left, the quota counts each file once and the hooks tell of each
// once.
func TestReplicasFaults(t *testing.T) {
	// The first append of each resumable upload is one part of the
	// bucket's (--s3-part-size, 16 MiB by default): kept whole in the
	// bucket, it is what a resume after the kill must find there. (A
	// shorter tail is kept too, but the append after it takes it up
	// first, and a kill during that append loses it: the client sends it
	// again.)
	const (
		part     = 16 << 20
		small    = 2*part + 1<<20
		hold     = 2 << 20
		bigSize  = 256 << 20
		download = 64 << 20
	)
	srv := s3test.Start(t, s3test.Options{})
	rc := newHookReceiver(t)
	rs := &replicaSet{t: t, srv: srv, s: make([]*server, 3),
		args: []string{"--upload", "--trusted-proxy", "127.0.0.1", "--access", writeAccessFile(t, replicasAccess), "--quota-sync", "200ms",
			"--hook-notify", rc.URL("/notify"), "--hook-secret-file", hookSecretFile(t), "--hook-retry-max", "1s"}}
	for range 3 {
		rs.addrs = append(rs.addrs, freeAddr(t))
	}
	for i := range 3 {
		rs.start(i)
	}
	lb := startBalancer(t, rs.addrs)
	_, dlSHA := putRandom(t, srv, "seed/movie.bin", download, 71)
	big := filepath.Join(t.TempDir(), "big.bin")
	bigSHA := writeRandom(t, big, bigSize, 72)

	// Requests held midway, one at a time so that the replica each went
	// to shows in the metrics: a tus upload picks the victim, and an IETF
	// upload and a download are begun until one of each is on it too.
	open := make(chan struct{})
	var uploads []*faultUpload
	victim := -1
	hasIETF, hasDownload := false, false
	for n := 0; n < 6 && (victim < 0 || !hasIETF); n++ {
		u := &faultUpload{ietf: victim >= 0, name: fmt.Sprintf("up/%d.bin", n), data: randomBytes(small, uint64(80+n))}
		u.create(t, lb, part)
		_, base := rs.sum("largo_bytes_received_total")
		u.begin(part, hold, open)
		u.on = rs.landed("largo_bytes_received_total", base, hold/2)
		uploads = append(uploads, u)
		if victim < 0 {
			victim = u.on
		} else if u.on == victim {
			hasIETF = true
		}
	}
	var downloads []chan string
	var resumed atomic.Int32
	for n := 0; n < 4 && !hasDownload; n++ {
		_, base := rs.sum("largo_transfers_active")
		done := make(chan string, 1)
		go heldDownload(lb+"seed/movie.bin", hold, open, done, &resumed)
		downloads = append(downloads, done)
		hasDownload = rs.landed("largo_transfers_active", base, 1) == victim
	}
	if !hasIETF || !hasDownload {
		t.Fatalf("no IETF upload (%v) or download (%v) went to the replica of the tus upload: not round robin?", hasIETF, hasDownload)
	}

	// The parallel upload, killed into once it is well under way.
	before, _ := rs.sum("largo_bytes_received_total")
	c := startClientEnv(t, []string{"XDG_CACHE_HOME=" + t.TempDir(), "LARGO_TOKEN=alice-token-0123456789"}, "put", "-j", "8", big, lb+"up/big.bin", "-q")
	poll.Wait(t, 30*time.Second, "the parallel upload under way", func() bool {
		now, _ := rs.sum("largo_bytes_received_total")
		return now-before >= bigSize/4
	})
	rs.s[victim].cmd.Process.Kill()
	rs.s[victim].wait(10 * time.Second)
	close(open)

	// The held requests finish, those cut resumed through the others.
	for _, u := range uploads {
		if err := <-u.done; err != nil {
			t.Error(err)
		}
	}
	for _, done := range downloads {
		if got := <-done; got != dlSHA {
			t.Errorf("a download through the balancer: %s; want sha %s", got, dlSHA)
		}
	}
	if resumed.Load() == 0 {
		t.Error("no download was cut by the kill and resumed")
	}
	rs.start(victim)
	if code := c.wait(t, 120*time.Second); code != 0 {
		t.Fatalf("largo put -j 8: exit %d\n%s", code, c.stderr.String())
	}

	for _, u := range uploads {
		switch {
		case u.on == victim && u.resume < 0:
			t.Errorf("%s, held on the killed replica, did not need resuming", u.name)
		case u.resume >= 0 && u.resume < part:
			t.Errorf("%s resumed at %d: the part of %d bytes accepted before the kill was lost", u.name, u.resume, part)
		}
	}

	// Every file whole in the bucket, and through each replica.
	want := map[string]string{"up/big.bin": bigSHA}
	total := int64(bigSize)
	for _, u := range uploads {
		want[u.name] = sha256hex(u.data)
		total += small
	}
	for name, sha := range want {
		if got := fileSHA(t, filepath.Join(srv.Dir, srv.Bucket, filepath.FromSlash(name))); got != sha {
			t.Errorf("%s in the bucket: sha %s; want %s", name, got, sha)
		}
	}
	for _, s := range rs.s {
		resp := get(t, s.URL+"up/big.bin", aliceAuth...)
		if got, n := bodySHA(t, resp.Body); got != bigSHA {
			t.Errorf("up/big.bin through %s: %d bytes, sha %s", s.Addr, n, got)
		}
	}

	// Nothing of the uploads left in the bucket's state (no lease) but
	// what the kill may have left of a write in progress there, which the
	// next sweep of abandoned writes removes: a multipart upload, and a
	// piece of the parallel upload whose creation's answer was lost, the
	// client having created another.
	leftovers := func() (left, ups []string) {
		for _, k := range stateKeys(t, srv) {
			if !kept(k) {
				left = append(left, k)
			}
		}
		return left, srv.Uploads(t, srv.Bucket, "")
	}
	if left, ups := leftovers(); len(left) != 0 || len(ups) != 0 {
		for _, k := range left {
			switch {
			case strings.HasPrefix(k, ".largo/multipart/"):
			case strings.HasPrefix(k, ".largo/tus/") && strings.HasSuffix(k, ".info"):
				b, _ := srv.Get(t, srv.Bucket, k)
				var info struct {
					Offset    int64
					IsPartial bool
				}
				json.Unmarshal(b, &info)
				if !info.IsPartial || info.Offset != 0 {
					t.Errorf("an upload left with %d bytes (partial: %v), not resumed: %s", info.Offset, info.IsPartial, b)
				}
			default:
				t.Errorf("state left in the bucket: %s", k)
			}
		}
		t.Logf("left by the kill: records %v, multipart uploads %v", left, ups)
		startLargo(t, append([]string{"serve", "--store", "s3://" + srv.Bucket + "/", "--listen", "127.0.0.1:0", "--upload-expiry", "1s"}, rs.args...), srv.Env())
		poll.Wait(t, 20*time.Second, "the sweep of what the kill left", func() bool {
			left, ups := leftovers()
			return len(left) == 0 && len(ups) == 0
		})
	}

	// The quota counts each file once on every replica, and the hooks
	// told of each once.
	for _, s := range rs.s {
		poll.Wait(t, 20*time.Second, "the quota's usage on "+s.Addr, func() bool {
			return metric(t, s, `largo_quota_used_bytes{quota="user:alice"}`) == float64(total)
		})
	}
	rc.waitEvents(t, 30*time.Second, "an event of each upload", func(evs []hookEvent) bool {
		return len(eventsOf(evs, "committed")) == len(want)
	})
	seen := map[string]int{}
	for _, e := range rc.received() {
		if e.Type == "committed" {
			seen[e.Name]++
		}
	}
	for name := range want {
		if seen[name] != 1 {
			t.Errorf("%d committed events for %s; want 1", seen[name], name)
		}
	}
	if p := rc.problems(); len(p) > 0 {
		t.Errorf("hook requests with problems: %q", p)
	}
}

// kept reports whether a state key is one that stays after the uploads
// end: the hooks' outbox and its sender's lease, the quotas' usage, the
// record that answers a parallel upload's final request sent again
// until the uploads expire, and the records of the servers running.
func kept(k string) bool {
	for _, p := range []string{".largo/hooks/", ".largo/quota/", ".largo/tus-concat/", ".largo/servers/"} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// sha256hex is the hex sha-256 of b.
func sha256hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
