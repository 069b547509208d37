//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"largo/internal/poll"
	"largo/internal/testenv"
)

// largo behind real proxies, nginx and Caddy, configured as
// docs/deploy.md shows (they end TLS, with a certificate of the test's):
// the client's address comes through
// X-Forwarded-For (or a PROXY protocol header, from nginx's stream
// module), the user the proxy signs in through Remote-User and
// Remote-Groups, and every protocol (downloads, PUT, tus, the IETF
// protocol, WebDAV) goes through. The proxies here sign users in by a
// bearer token of their own, mapped to a name and groups, as an identity
// proxy would by its session: largo never sees those tokens as its own.
//
// The clients connect from 127.0.0.2 and 127.0.0.3 (the loopback
// network answers them all), so that a client's address is not the
// proxy's, 127.0.0.1, which alone is trusted.

// The proxies' tokens, which they map to a user.
const (
	aliceAtProxy = "alice-at-the-proxy-0123" // alice, in editors and staff
	daveAtProxy  = "dave-at-the-proxy-01234" // dave, in no group
	carolAtProxy = "carol-at-the-proxy-0123" // carol, whom the access file does not list
)

// bobLargoToken is largo's own token of bob, which the proxies pass on.
const bobLargoToken = "bob-token-of-largo-0123"

// proxyAccess is the access file: alice and dave sign in only through the
// proxy, bob with his token; editors may do everything in /team.
const proxyAccess = `
[[user]]
name = "alice"

[[user]]
name = "dave"

[[user]]
name = "bob"
tokens = ["` + bobLargoToken + `"]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/team"
users = ["group:editors"]
allow = ["all"]

[[rule]]
path = "/bob"
users = ["bob"]
allow = ["all"]

[proxy]
users = "listed"
`

// startProxied serves g behind a proxy at 127.0.0.1: the access file,
// the proxy's fields, WebDAV, and a cap of two connections per client.
func startProxied(t *testing.T, g *target, extra ...string) *server {
	t.Helper()
	access := filepath.Join(t.TempDir(), "access.toml")
	if err := os.WriteFile(access, []byte(proxyAccess), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--access", access, "--webdav", "--max-conns-per-ip", "2",
		"--trusted-proxy", "127.0.0.1", "--identity-header", "Remote-User", "--groups-header", "Remote-Groups", adminListen, "127.0.0.1:0"}, extra...)
	if g.srv == nil {
		return startServer(t, g.dir, args...)
	}
	return startS3Largo(t, g.srv, "", args...)
}

// dialerFrom dials from the loopback address ip.
func dialerFrom(ip string) *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
}

// clientFrom is an HTTP client whose connections leave from ip, and that
// trusts roots (nil: the system's). Its bound on a request is there so
// that a failing test fails rather than hangs.
func clientFrom(ip string, roots *x509.CertPool) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:       dialerFrom(ip).DialContext,
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{RootCAs: roots},
	}, Timeout: 2 * time.Minute}
}

// front is a proxy in front of largo, ending TLS.
type front struct {
	url      string         // its base URL, https
	certFile string         // its certificate, which clients trust
	roots    *x509.CertPool // the same
}

// do sends a request from c with headers as name, value pairs, and
// returns the response with its body read.
func do(t *testing.T, c *http.Client, method, url string, body io.Reader, size int64, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	if size == 0 {
		req.Body = http.NoBody
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// startProxyProcess runs a proxy, stopped when the test ends (SIGTERM,
// then, should it still wait for connections, SIGKILL), and waits until
// addr accepts connections.
func startProxyProcess(t *testing.T, bin string, args, env []string, addr string, logs func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	if !waitFor(10*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		t.Fatalf("%s did not start: %s %s", cmd.Path, out.String(), logs())
	}
}

// nginxStream is the stream module, which proxies TCP with a PROXY
// protocol header (Debian's libnginx-mod-stream).
const nginxStream = "/usr/lib/nginx/modules/ngx_stream_module.so"

// startNginxProxy runs nginx in front of upstream, as docs/deploy.md
// configures it; with stream, it is also a TCP proxy to upstream at tcp,
// which sends a PROXY protocol header.
func startNginxProxy(t *testing.T, upstream string, stream bool) (f front, tcp string) {
	t.Helper()
	bin := need(t, "nginx")
	prefix := t.TempDir()
	addr := freeAddr(t)
	tcp = freeAddr(t)
	cert, key, roots := selfSigned(t)
	user, modules, streamBlock := "", "", ""
	if os.Getuid() == 0 {
		user = "user root;"
	}
	if stream {
		testenv.File(t, nginxStream, "nginx's stream module, Debian's libnginx-mod-stream")
		modules = "load_module " + nginxStream + ";"
		streamBlock = fmt.Sprintf(`stream {
	server {
		listen %s;
		proxy_pass %s;
		proxy_protocol on;
	}
}`, tcp, upstream)
	}
	conf := fmt.Sprintf(`%[1]s
%[2]s
worker_processes 1;
daemon off;
pid %[3]s/nginx.pid;
error_log %[3]s/error.log;
events { worker_connections 256; }
%[6]s
http {
	access_log %[3]s/access.log;
	client_body_temp_path %[3]s/body;
	proxy_temp_path %[3]s/proxy;

	# The proxy's own sign-in: a token names a user and their groups.
	map $http_authorization $largo_user {
		default "";
		"Bearer %[7]s" alice;
		"Bearer %[8]s" dave;
		"Bearer %[9]s" carol;
	}
	map $largo_user $largo_groups {
		default "";
		alice "editors, staff";
	}

	server {
		listen %[4]s ssl;
		ssl_certificate %[10]s;
		ssl_certificate_key %[11]s;
		client_max_body_size 0;
		location / {
			proxy_pass http://%[5]s;
			proxy_http_version 1.1;
			proxy_request_buffering off;
			proxy_buffering off;
			proxy_set_header Host $http_host;
			proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
			proxy_set_header X-Forwarded-Proto $scheme;
			proxy_set_header Remote-User $largo_user;
			proxy_set_header Remote-Groups $largo_groups;
		}
	}
}
`, user, modules, prefix, addr, upstream, streamBlock, aliceAtProxy, daveAtProxy, carolAtProxy, cert, key)
	confPath := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	startProxyProcess(t, bin, []string{"-p", prefix, "-c", confPath, "-e", filepath.Join(prefix, "error.log")}, nil, addr,
		func() string { b, _ := os.ReadFile(filepath.Join(prefix, "error.log")); return string(b) })
	return front{url: "https://" + addr + "/", certFile: cert, roots: roots}, tcp
}

// startCaddyProxy runs Caddy in front of upstream, as docs/deploy.md
// configures it.
func startCaddyProxy(t *testing.T, upstream string) front {
	t.Helper()
	bin := need(t, "caddy")
	dir := t.TempDir()
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	cert, key, roots := selfSigned(t)
	conf := fmt.Sprintf(`{
	admin off
	auto_https disable_redirects
	skip_install_trust
}

https://127.0.0.1:%[1]s {
	bind 127.0.0.1
	tls %[6]s %[7]s
	# The proxy's own sign-in: a token names a user and their groups.
	map {http.request.header.Authorization} {largo_user} {largo_groups} {
		"Bearer %[3]s" alice "editors|staff"
		"Bearer %[4]s" dave ""
		"Bearer %[5]s" carol ""
		default "" ""
	}
	request_header -Remote-User
	request_header -Remote-Groups
	reverse_proxy %[2]s {
		header_up Remote-User {largo_user}
		header_up Remote-Groups {largo_groups}
		flush_interval -1
	}
}
`, port, upstream, aliceAtProxy, daveAtProxy, carolAtProxy, cert, key)
	confPath := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	startProxyProcess(t, bin, []string{"run", "--adapter", "caddyfile", "--config", confPath},
		[]string{"XDG_DATA_HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "HOME=" + dir}, addr, func() string { return "" })
	return front{url: "https://" + addr + "/", certFile: cert, roots: roots}
}

// TestProxyNginx: largo on a folder and on a bucket behind nginx; on the
// folder, nginx's stream module in front too, with PROXY headers.
func TestProxyNginx(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		s := startProxied(t, g, "--proxy-protocol")
		f, tcp := startNginxProxy(t, s.Addr, g.srv == nil)
		throughProxy(t, g, s, f)
		if g.srv == nil {
			throughProxyProtocol(t, s, tcp)
		}
	})
}

// TestProxyCaddy: largo on a folder behind Caddy.
func TestProxyCaddy(t *testing.T) {
	g := &target{kind: "disk", dir: t.TempDir()}
	s := startProxied(t, g)
	throughProxy(t, g, s, startCaddyProxy(t, s.Addr))
}

// accessLogged reports whether the server logged a request for path from
// client (a prefix of the client's address).
func accessLogged(s *server, path, client string) bool {
	for line := range strings.Lines(s.stderr.String()) {
		if strings.Contains(line, "msg=request ") && strings.Contains(line, " path="+path+" ") && strings.Contains(line, " client="+client) {
			return true
		}
	}
	return false
}

// throughProxy drives every protocol through the proxy f, from 127.0.0.2
// (and 127.0.0.3), and checks what largo saw of the clients.
func throughProxy(t *testing.T, g *target, s *server, f front) {
	front := f.url
	a, b := clientFrom("127.0.0.2", f.roots), clientFrom("127.0.0.3", f.roots)
	alice := []string{"Authorization", "Bearer " + aliceAtProxy}
	const seedSize = 8 << 20
	seedPath := filepath.Join(t.TempDir(), "seed.bin")
	seedSHA := writeRandom(t, seedPath, seedSize, 61)
	seed, err := os.ReadFile(seedPath)
	if err != nil {
		t.Fatal(err)
	}
	g.seed(t, "seed.bin", string(seed))

	// Downloads, whole and a range: the log names the client, not the
	// proxy, even when the client claims another address first.
	req, _ := http.NewRequest("GET", front+"seed.bin", nil)
	req.Header.Set("X-Forwarded-For", "10.9.9.9")
	resp, err := a.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if got, n := bodySHA(t, resp.Body); resp.StatusCode != 200 || got != seedSHA || n != seedSize {
		t.Fatalf("GET through the proxy: %d, %d bytes", resp.StatusCode, n)
	}
	resp.Body.Close()
	if resp, body := do(t, a, "GET", front+"seed.bin", nil, 0, "Range", "bytes=1000-1999"); resp.StatusCode != 206 || body != string(seed[1000:2000]) {
		t.Errorf("a range through the proxy: %d, %d bytes", resp.StatusCode, len(body))
	}
	if !waitFor(5*time.Second, func() bool { return accessLogged(s, "/seed.bin", "127.0.0.2:0 ") }) {
		t.Errorf("no access line names the client 127.0.0.2:\n%s", tail(s.stderr.String(), 2000))
	}
	if accessLogged(s, "/seed.bin", "10.9.9.9") || accessLogged(s, "/seed.bin", "127.0.0.1") {
		t.Error("an access line names the address the client claimed, or the proxy")
	}

	// A PUT streams through: largo holds half of the body while the
	// client still sends the rest, which a proxy buffering the body
	// would not let happen.
	const upSize = 32 << 20
	upPath := filepath.Join(t.TempDir(), "up.bin")
	upSHA := writeRandom(t, upPath, upSize, 62)
	up, err := os.Open(upPath)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	before := metric(t, s, "largo_bytes_received_total")
	pr, pw := io.Pipe()
	put := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest("PUT", front+"team/up.bin", pr)
		req.ContentLength = upSize
		req.Header.Set("Authorization", "Bearer "+aliceAtProxy)
		resp, err := a.Do(req)
		if err != nil {
			pr.CloseWithError(err)
			put <- nil
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		put <- resp
	}()
	if _, err := io.CopyN(pw, up, upSize/2); err != nil {
		t.Fatal(err)
	}
	if !waitFor(15*time.Second, func() bool { return metric(t, s, "largo_bytes_received_total")-before >= upSize/4 }) {
		t.Fatalf("largo received %v bytes of a PUT whose client sent %d and waits: the proxy holds the body",
			metric(t, s, "largo_bytes_received_total")-before, upSize/2)
	}
	if _, err := io.Copy(pw, up); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if resp := <-put; resp == nil || resp.StatusCode != 201 {
		t.Fatalf("the streamed PUT: %v", resp)
	}
	if got := fileSHA(t, filepath.Join(g.dir, "team", "up.bin")); got != upSHA {
		t.Fatalf("stored sha %s; want %s", got, upSHA)
	}

	// Who the proxy names: a user without the group is refused, one the
	// access file does not know too (403, with the reason), and a client
	// that writes the fields itself is nobody.
	if resp, _ := do(t, a, "PUT", front+"team/dave.txt", strings.NewReader("x"), 1, "Authorization", "Bearer "+daveAtProxy); resp.StatusCode != 403 {
		t.Errorf("dave, in no group, writes in team: %d", resp.StatusCode)
	}
	if resp, body := do(t, a, "GET", front+"seed.bin", nil, 0, "Authorization", "Bearer "+carolAtProxy); resp.StatusCode != 403 || !strings.Contains(body, "does not know") {
		t.Errorf("carol, unknown: %d %q", resp.StatusCode, body)
	}
	if resp, _ := do(t, a, "PUT", front+"team/spoof.txt", strings.NewReader("x"), 1, "Remote-User", "alice", "Remote-Groups", "editors"); resp.StatusCode != 401 {
		t.Errorf("a client's own Remote-User through the proxy: %d; want 401", resp.StatusCode)
	}
	absent(t, g.dir, "team/spoof.txt")
	// The proxy's user wins over a credential of largo's on the same
	// request: alice, not bob, writes.
	if resp, _ := do(t, a, "PUT", front+"bob/alice.txt", strings.NewReader("x"), 1, "Authorization", "Bearer "+aliceAtProxy); resp.StatusCode != 403 {
		t.Errorf("alice in bob's folder: %d", resp.StatusCode)
	}

	// tus through the proxy, with tus-js-client: the upload's URL, which
	// largo makes from the request it was given (plain HTTP), is https
	// as the proxy rewrites it.
	const tusSize = 12 << 20
	tusPath := filepath.Join(t.TempDir(), "clip.bin")
	tusSHA := writeRandom(t, tusPath, tusSize, 63)
	node := nodeScript(t, "tus-upload.mjs", "--endpoint", front+"_largo/uploads/", "--file", tusPath,
		"--name", "team/clip.bin", "--token", aliceAtProxy, "--chunk", strconv.Itoa(4<<20))
	node.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+f.certFile)
	out, err := node.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "done "+front+"_largo/uploads/") {
		t.Fatalf("tus-js-client through the proxy: %v\n%s", err, tail(string(out), 2000))
	}
	if got := fileSHA(t, filepath.Join(g.dir, "team", "clip.bin")); got != tusSHA {
		t.Fatalf("tus: stored sha %s; want %s", got, tusSHA)
	}

	// The IETF protocol through the proxy: a creation with its first
	// part, the offset, and the rest. Through a trusted proxy largo sends
	// no 104 (nginx would take it for the final answer and stop passing
	// the body on): the upload's URL comes in the final answer.
	ietf := append([]string{"Upload-Draft-Interop-Version", "9"}, alice...)
	const half = upSize / 2
	first := int64(half)
	resp, body := do(t, a, "PUT", front+"team/ietf.bin", io.NewSectionReader(up, 0, first), first, append(ietf, "Upload-Complete", "?0")...)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != 201 || !strings.HasPrefix(loc, "/_largo/uploads/ietf/") || resp.Header.Get("Upload-Offset") != strconv.FormatInt(first, 10) {
		t.Fatalf("IETF creation through the proxy: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	upload := strings.TrimSuffix(front, "/") + loc
	resp, _ = do(t, a, "HEAD", upload, nil, 0, ietf...)
	if resp.StatusCode != 204 || resp.Header.Get("Upload-Offset") != strconv.Itoa(half) {
		t.Fatalf("IETF offset through the proxy: %d %v", resp.StatusCode, resp.Header)
	}
	resp, body = do(t, a, "PATCH", upload, io.NewSectionReader(up, half, upSize-half), upSize-half,
		append(ietf, "Content-Type", "application/partial-upload", "Upload-Offset", strconv.Itoa(half), "Upload-Complete", "?1")...)
	if resp.StatusCode != 201 {
		t.Fatalf("IETF append through the proxy: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if got := fileSHA(t, filepath.Join(g.dir, "team", "ietf.bin")); got != upSHA {
		t.Fatalf("IETF: stored sha %s; want %s", got, upSHA)
	}

	// WebDAV through the proxy: a listing, a folder, a copy and a move
	// whose Destination names the proxy, a removal.
	if resp, body := do(t, a, "PROPFIND", front+"team/", nil, 0, append(alice, "Depth", "1")...); resp.StatusCode != 207 || !strings.Contains(body, "up.bin") {
		t.Errorf("PROPFIND through the proxy: %d", resp.StatusCode)
	}
	if resp, _ := do(t, a, "MKCOL", front+"team/sub/", nil, 0, alice...); resp.StatusCode != 201 {
		t.Errorf("MKCOL through the proxy: %d", resp.StatusCode)
	}
	if resp, body := do(t, a, "COPY", front+"team/up.bin", nil, 0, append(alice, "Destination", front+"team/sub/copy.bin")...); resp.StatusCode != 201 {
		t.Errorf("COPY through the proxy: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, a, "MOVE", front+"team/ietf.bin", nil, 0, append(alice, "Destination", front+"team/sub/moved.bin")...); resp.StatusCode != 201 {
		t.Errorf("MOVE through the proxy: %d %s", resp.StatusCode, body)
	}
	for _, name := range []string{"copy.bin", "moved.bin"} {
		if got := fileSHA(t, filepath.Join(g.dir, "team", "sub", name)); got != upSHA {
			t.Errorf("team/sub/%s: sha %s", name, got)
		}
	}
	if resp, _ := do(t, a, "DELETE", front+"team/sub/copy.bin", nil, 0, alice...); resp.StatusCode != 204 {
		t.Errorf("DELETE through the proxy: %d", resp.StatusCode)
	}
	if resp, _ := do(t, a, "MKCOL", front+"team/dave/", nil, 0, "Authorization", "Bearer "+daveAtProxy); resp.StatusCode != 403 {
		t.Errorf("MKCOL of dave: %d", resp.StatusCode)
	}

	// The proxy's connections are not capped per address: four downloads
	// at once through it, where a client of its own may hold two.
	func() {
		for i := range 4 {
			resp, err := a.Get(front + "seed.bin")
			if err != nil {
				t.Fatalf("download %d at once through the proxy: %v", i+1, err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("download %d at once through the proxy: %d", i+1, resp.StatusCode)
			}
		}
	}()

	// Failed sign-ins count against the client, not the proxy: a client
	// that fails too often leaves another one alone.
	wrong := []string{"Authorization", "Bearer not-a-token-of-anyone-0"}
	if !waitFor(10*time.Second, func() bool {
		resp, _ := do(t, a, "GET", front+"bob/", nil, 0, wrong...)
		return resp.StatusCode == 429
	}) {
		t.Fatal("a client failing again and again was never refused 429")
	}
	if resp, _ := do(t, b, "PUT", front+"bob/b.txt", strings.NewReader("b"), 1, "Authorization", "Bearer "+bobLargoToken); resp.StatusCode != 201 {
		t.Errorf("bob, from another client behind the same proxy: %d; want 201", resp.StatusCode)
	}
	g.clean(t)
}

// throughProxyProtocol drives requests through a TCP proxy that sends a
// PROXY protocol header: the client's address is the header's, its
// connections are capped as its own, and its own fields are not
// believed, since the TCP proxy passes them unread.
func throughProxyProtocol(t *testing.T, s *server, tcp string) {
	base := "http://" + tcp + "/"
	a := clientFrom("127.0.0.2", nil)
	if resp, _ := do(t, a, "GET", base+"_largo/healthz", nil, 0, "X-Forwarded-For", "10.9.9.9"); resp.StatusCode != 200 {
		t.Fatalf("GET through the TCP proxy: %d", resp.StatusCode)
	}
	// The address of the client's own connection, port and all, as the
	// header gives it; not the one the client wrote.
	if !waitFor(5*time.Second, func() bool { return accessLogged(s, "/_largo/healthz", "127.0.0.2:") }) ||
		accessLogged(s, "/_largo/healthz", "127.0.0.2:0 ") || accessLogged(s, "/_largo/healthz", "10.9.9.9") {
		t.Errorf("no access line names the client the PROXY header named:\n%s", tail(s.stderr.String(), 2000))
	}
	if resp, _ := do(t, a, "PUT", base+"team/spoof.txt", strings.NewReader("x"), 1, "Remote-User", "alice", "Remote-Groups", "editors"); resp.StatusCode != 401 {
		t.Errorf("a client's own Remote-User through the TCP proxy: %d; want 401", resp.StatusCode)
	}

	// Two connections of the client's at once are its cap; the third is
	// refused, and another client is served.
	hold := func(ip string) (*http.Response, net.Conn) {
		c, err := dialerFrom(ip).Dial("tcp", tcp)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "GET /seed.bin HTTP/1.1\r\nHost: %s\r\n\r\n", tcp)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("from %s: %v", ip, err)
		}
		return resp, c
	}
	for i := range 2 {
		if resp, _ := hold("127.0.0.2"); resp.StatusCode != 200 {
			t.Fatalf("connection %d of the client: %d", i+1, resp.StatusCode)
		}
	}
	if resp, _ := hold("127.0.0.2"); resp.StatusCode != 503 {
		t.Errorf("a third connection of the client: %d; want 503", resp.StatusCode)
	}
	if resp, _ := hold("127.0.0.3"); resp.StatusCode != 200 {
		t.Errorf("another client through the TCP proxy: %d", resp.StatusCode)
	}
}

// TestProxyUntrusted: a client that is not a trusted proxy, sending the
// proxies' fields itself, gets neither its claimed address nor its
// claimed user taken; nor a PROXY header.
func TestProxyUntrusted(t *testing.T) {
	g := &target{kind: "disk", dir: t.TempDir()}
	g.seed(t, "a.txt", "hello")
	s := startProxied(t, g, "--proxy-protocol")
	a := clientFrom("127.0.0.2", nil)
	if resp, _ := do(t, a, "PUT", s.URL+"team/x.txt", strings.NewReader("x"), 1,
		"X-Forwarded-For", "127.0.0.1", "Forwarded", "for=127.0.0.1", "Remote-User", "alice", "Remote-Groups", "editors"); resp.StatusCode != 401 {
		t.Errorf("Remote-User from an untrusted client: %d; want 401", resp.StatusCode)
	}
	absent(t, g.dir, "team/x.txt")
	if !waitFor(5*time.Second, func() bool { return accessLogged(s, "/team/x.txt", "127.0.0.2:") }) ||
		accessLogged(s, "/team/x.txt", "127.0.0.1") || accessLogged(s, "/team/x.txt", "127.0.0.2:0 ") {
		t.Errorf("the access line does not name the connection's own address:\n%s", tail(s.stderr.String(), 2000))
	}
	// A PROXY header from an untrusted client is its request's first
	// line: refused.
	c, err := dialerFrom("127.0.0.2").Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "PROXY TCP4 127.0.0.1 127.0.0.1 1 2\r\nGET /a.txt HTTP/1.1\r\nHost: 127.0.0.1\r\nRemote-User: alice\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 400 {
		t.Errorf("a PROXY header from an untrusted client: %v, %v; want 400", resp, err)
	}
	// The per-address cap holds for clients: two connections of one
	// address at once, not three.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var conns []net.Conn
	for range 2 {
		c, err := dialerFrom("127.0.0.2").DialContext(ctx, "tcp", s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	// Both are counted once the server took them: a request on each.
	for _, c := range conns {
		fmt.Fprintf(c, "GET /a.txt HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 200 {
			t.Fatalf("a client's connection: %v, %v", resp, err)
		}
	}
	if !poll.Until(10*time.Second, 50*time.Millisecond, func() bool {
		resp, err := clientFrom("127.0.0.2", nil).Get(s.URL + "a.txt")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 503
	}) {
		t.Error("a third connection of one client was not refused")
	}
}
