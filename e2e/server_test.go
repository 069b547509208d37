//go:build e2e

package e2e

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"largo/internal/poll"
)

// runLargo runs largo to its end and returns its exit code and output.
func runLargo(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(largoBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("largo %v still running after 20s", args)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

func TestStartErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"missing folder", nil, []string{"serve", filepath.Join(t.TempDir(), "nope")}, "no such file or directory"},
		{"a file", nil, []string{"serve", file}, "not a directory"},
		{"port in use", nil, []string{"serve", t.TempDir(), "--listen", busy.Addr().String()}, "address already in use"},
		{"bad address", nil, []string{"serve", t.TempDir(), "--listen", "nonsense"}, "cannot listen"},
		{"unknown flag", nil, []string{"serve", "--bogus"}, "unknown flag"},
		{"bad env", []string{"LARGO_IDLE_TIMEOUT=soon"}, []string{"serve", t.TempDir()}, "LARGO_IDLE_TIMEOUT"},
		{"bad size", nil, []string{"serve", t.TempDir(), "--min-rate", "fast"}, "min-rate"},
		{"cert without key", nil, []string{"serve", t.TempDir(), "--tls-cert", file}, "--tls-key"},
		{"two folders", nil, []string{"serve", "a", "b"}, "accepts at most 1 arg"},
	}
	for _, tt := range tests {
		code, _, stderr := runLargo(t, tt.env, tt.args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(stderr, tt.want) || strings.Contains(stderr, "goroutine") {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and one line naming %q", tt.name, code, stderr, tt.want)
		}
	}
}

func TestHelp(t *testing.T) {
	code, out, _ := runLargo(t, nil, "serve", "--help-all")
	if code != 0 {
		t.Fatalf("serve --help-all: exit %d", code)
	}
	for _, flag := range []string{"--listen", "--idle-timeout", "--min-rate", "--max-conns", "--max-conns-per-ip", "--admin-listen", "--log-format", "--drain-timeout", "--tls-cert", "--tls-key", "LARGO_LISTEN", `default "127.0.0.1:8080"`, "default 1m0s"} {
		if !strings.Contains(out, flag) {
			t.Errorf("serve --help-all lacks %q", flag)
		}
	}
	if code, out, _ := runLargo(t, nil, "completion", "bash"); code != 0 || !strings.Contains(out, "largo") {
		t.Errorf("completion bash: exit %d", code)
	}
}

// TestEnvironment sets a flag through its variable and checks that the
// command line wins over it.
func TestEnvironment(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644)
	s := startLargo(t, []string{"serve", dir}, []string{"LARGO_LISTEN=127.0.0.1:0", "LARGO_LOG_FORMAT=json"})
	get(t, s.URL+"f")
	if !waitFor(2*time.Second, func() bool { return strings.Contains(s.stderr.String(), `"outcome":"complete"`) }) {
		t.Fatalf("LARGO_LOG_FORMAT=json not applied: %s", s.stderr.String())
	}
	var line map[string]any
	for l := range strings.SplitSeq(s.stderr.String(), "\n") {
		if strings.Contains(l, `"path":"/f"`) {
			json.Unmarshal([]byte(l), &line)
		}
	}
	for _, k := range []string{"method", "path", "status", "bytes", "duration", "client", "outcome"} {
		if _, ok := line[k]; !ok {
			t.Errorf("access log line lacks %q: %v", k, line)
		}
	}
	s2 := startLargo(t, []string{"serve", dir, "--log-format", "text"}, []string{"LARGO_LISTEN=127.0.0.1:0", "LARGO_LOG_FORMAT=json"})
	get(t, s2.URL+"f")
	if !waitFor(2*time.Second, func() bool { return strings.Contains(s2.stderr.String(), "outcome=complete") }) {
		t.Fatalf("flag did not win over the variable: %s", s2.stderr.String())
	}
}

func TestConnectionLimits(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644)
	s := startServer(t, dir, "--max-conns", "3")
	idle := s.idleFDs()
	var held []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	// The three are taken once the server holds a descriptor for each.
	poll.Wait(t, 10*time.Second, "the server to accept three connections", func() bool { return s.fds() >= idle+3 })
	code, hdr := rawStatus(t, s.Addr, "/f")
	if code != 503 || hdr.Get("Retry-After") == "" {
		t.Fatalf("fourth connection: %d, Retry-After %q; want 503 with Retry-After", code, hdr.Get("Retry-After"))
	}
	for _, c := range held {
		c.Close()
	}
	if !waitFor(3*time.Second, func() bool { c, _ := rawStatus(t, s.Addr, "/f"); return c == 200 }) {
		t.Fatal("server did not recover once connections closed")
	}

	s2 := startServer(t, dir, "--max-conns-per-ip", "1")
	idle2 := s2.idleFDs()
	c, err := net.Dial("tcp", s2.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	poll.Wait(t, 10*time.Second, "the server to accept a connection", func() bool { return s2.fds() >= idle2+1 })
	if code, _ := rawStatus(t, s2.Addr, "/f"); code != 503 {
		t.Fatalf("second connection from one address: %d; want 503", code)
	}
}

func rawStatus(t *testing.T, addr, target string) (int, http.Header) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", target)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, nil
	}
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header
}

// metricsAccess names who reads the metrics on the main listener: alice,
// by a rule of their own; "/" is open to everyone, which does not open
// them.
const metricsAccess = `
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]

[[user]]
name = "bob"
tokens = ["bob-token-0123456789"]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/_largo/metrics"
users = ["alice"]
allow = ["read"]
`

// TestMetricsAndHealth: health and readiness answer anyone; the metrics,
// which name users and private paths, are the operator's: refused on the
// main listener to an anonymous client (401) and to an ordinary user
// (403), with the reason, and read on the admin listener, or on the main
// one by the user a rule of the access file names for them.
func TestMetricsAndHealth(t *testing.T) {
	dir := t.TempDir()
	writeRandom(t, filepath.Join(dir, "m.bin"), 1<<20, 5)
	s := startServer(t, dir, "--upload", "--token", testToken)
	for _, p := range []string{"_largo/healthz", "_largo/readyz"} {
		if resp := get(t, s.URL+p); resp.StatusCode != 200 {
			t.Errorf("%s: %d", p, resp.StatusCode)
		}
	}
	refused := func(who string, resp *http.Response, want int) {
		t.Helper()
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || !strings.Contains(string(b), "--admin-listen") || strings.Contains(string(b), "largo_") {
			t.Errorf("metrics on the main listener to %s: %d %q; want %d with the reason", who, resp.StatusCode, b, want)
		}
	}
	refused("an anonymous client", get(t, s.URL+"_largo/metrics"), 401)
	refused("the token's user", get(t, s.URL+"_largo/metrics", "Authorization", "Bearer "+testToken), 403)

	// With --admin-listen, metrics and pprof are there, and not on the
	// main listener.
	admin := freeAddr(t)
	s2 := startServer(t, dir, "--admin-listen", admin)
	io.Copy(io.Discard, get(t, s2.URL+"m.bin").Body)
	resp := get(t, "http://"+admin+"/metrics")
	b, _ := io.ReadAll(resp.Body)
	m := string(b)
	for _, want := range []string{"largo_transfers_active", `largo_transfers_total{outcome="complete"}`, "largo_bytes_sent_total", "process_resident_memory_bytes", "process_open_fds", "go_goroutines"} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if !strings.Contains(m, "largo_bytes_sent_total 1.048576e+06") {
		t.Errorf("bytes sent not counted:\n%s", grepLines(m, "largo_bytes_sent_total"))
	}
	if resp := get(t, s2.URL+"_largo/metrics"); resp.StatusCode != 404 {
		t.Errorf("metrics on the main listener with --admin-listen: %d", resp.StatusCode)
	}
	if resp := get(t, "http://"+admin+"/debug/pprof/"); resp.StatusCode != 200 {
		t.Errorf("admin pprof: %d", resp.StatusCode)
	}
	// The heap profile is sampled (at the runtime's default, one in 512
	// KiB: the header says twice that) when an admin listener serves it.
	resp = get(t, "http://"+admin+"/debug/pprof/heap?debug=1")
	b, _ = io.ReadAll(resp.Body)
	if head, _, _ := strings.Cut(string(b), "\n"); !strings.HasSuffix(head, "@ heap/1048576") {
		t.Errorf("admin heap profile not sampled at the default rate: %q", head)
	}
	if resp := get(t, s2.URL+"debug/pprof/"); resp.StatusCode != 404 {
		t.Errorf("pprof on the main listener: %d", resp.StatusCode)
	}

	// An access file names who reads them on the main listener.
	access := filepath.Join(t.TempDir(), "access.toml")
	if err := os.WriteFile(access, []byte(metricsAccess), 0o600); err != nil {
		t.Fatal(err)
	}
	s3 := startServer(t, dir, "--access", access)
	refused("an anonymous client, under the access file", get(t, s3.URL+"_largo/metrics"), 401)
	refused("bob, whom no rule of theirs names", get(t, s3.URL+"_largo/metrics", "Authorization", "Bearer bob-token-0123456789"), 403)
	resp = get(t, s3.URL+"_largo/metrics", "Authorization", "Bearer alice-token-0123456789")
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "largo_transfers_active") {
		t.Errorf("metrics to alice, whom the rule names: %d", resp.StatusCode)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestTLS serves over HTTPS and checks that HTTP/2 is negotiated and that
// ranges work there too.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	want := writeRandom(t, filepath.Join(dir, "t.bin"), 8<<20, 6)
	certFile, keyFile, pool := selfSigned(t)
	s := startServer(t, dir, "--tls-cert", certFile, "--tls-key", keyFile)
	if !strings.HasPrefix(s.URL, "https://") {
		t.Fatalf("URL %s", s.URL)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	resp, err := client.Get(s.URL + "t.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := bodySHA(t, resp.Body)
	if resp.ProtoMajor != 2 || got != want {
		t.Fatalf("%s, sha match %v", resp.Proto, got == want)
	}
	req, _ := http.NewRequest("GET", s.URL+"t.bin", nil)
	req.Header.Set("Range", "bytes=-10")
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 206 || len(b) != 10 {
		t.Fatalf("range over HTTP/2: %d, %d bytes", resp.StatusCode, len(b))
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "largo test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
