package lab

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"largo"
)

var httpsScenario = &scenario{
	name:     "https",
	caseHead: "protocol",
	about: func(s Settings) string {
		return fmt.Sprintf("One download of the %s file over HTTPS by curl (-k: a self-signed P-256 certificate the lab makes), HTTP/1.1 and HTTP/2 (what browsers use). Only the servers the lab knows how to serve over TLS run it: largo, nginx, Caddy, and a peer whose command names {tmp}/cert.pem and {tmp}/key.pem (the lab writes them there).", largo.FormatSize(s.Size))
	},
	cases:   func(Config) []string { return []string{"h1", "h2"} },
	columns: []column{colWall, colMBps, colCPUPerGiB, colIdle, colAbove, {key: "version", head: "HTTP", text: true}},
	run:     runHTTPS,
}

// tlsForm returns the HTTPS form of srv, serving the certificate and key
// at {tmp}/cert.pem and {tmp}/key.pem, or false for a server the lab does
// not know how to serve over TLS. A peer whose command names
// {tmp}/cert.pem serves TLS itself and is taken as it is.
func tlsForm(srv Server) (Server, bool) {
	if strings.Contains(srv.Command, "{tmp}/cert.pem") {
		return srv, true
	}
	switch srv.Name {
	case "largo":
		if !strings.Contains(srv.Command, "{exe} serve") {
			return Server{}, false
		}
		return Server{Name: srv.Name, Command: "exec {exe} serve {dir} --listen 127.0.0.1:{port} --max-conns-per-ip 0 --digest-rate 0 --tls-cert {tmp}/cert.pem --tls-key {tmp}/key.pem"}, true
	case "nginx":
		s := presets["nginx"]()
		s.Files["nginx.conf"] = strings.Replace(s.Files["nginx.conf"], "listen 127.0.0.1:{port};",
			"listen 127.0.0.1:{port} ssl http2;\n        ssl_certificate {tmp}/cert.pem;\n        ssl_certificate_key {tmp}/key.pem;", 1)
		return s, srv.Command == s.Command
	case "caddy":
		if srv.Command != presets["caddy"]().Command {
			return Server{}, false
		}
		return Server{
			Name:    srv.Name,
			Command: "exec caddy run --adapter caddyfile --config {tmp}/Caddyfile",
			Files: map[string]string{"Caddyfile": "{\n\tadmin off\n\tauto_https off\n}\nhttps://127.0.0.1:{port} {\n" +
				"\ttls {tmp}/cert.pem {tmp}/key.pem\n\troot * {dir}\n\tfile_server\n}\n"},
		}, true
	}
	return Server{}, false
}

func runHTTPS(ctx context.Context, r *runner, srv Server, cs string) Result {
	var res Result
	curl, err := lookCurl()
	if err != nil {
		res.fail(fmt.Errorf("%w: %v", errUnsupported, err))
		return res
	}
	tsrv, ok := tlsForm(srv)
	if !ok {
		res.fail(fmt.Errorf("%w: the lab serves only largo, nginx and Caddy over TLS", errUnsupported))
		return res
	}
	cert, key, err := selfSigned()
	if err != nil {
		res.fail(fmt.Errorf("lab: %v", err))
		return res
	}
	if tsrv.Files == nil {
		tsrv.Files = map[string]string{}
	}
	tsrv.Files["cert.pem"], tsrv.Files["key.pem"] = cert, key

	f := r.data.random
	for _, p := range []string{f.path, r.data.warmUp.path} {
		if err := warm(p); err != nil {
			res.fail(fmt.Errorf("lab: %v", err))
			return res
		}
	}
	in, err := r.start(ctx, tsrv, r.data.dir, false)
	if err != nil {
		res.fail(fmt.Errorf("did not start: %v", err))
		return res
	}
	base := "https://" + in.addr + "/"
	// The same warm-up as every server's, over TLS: one small GET on a
	// connection that ends with curl.
	if _, err := curlTLS(ctx, curl, "--http1.1", base+r.data.warmUp.name, r.data.warmUp.size); err != nil {
		in.stop()
		res.fail(fmt.Errorf("warm-up request: %v", err))
		return res
	}
	in.guard.rebase()
	idle := in.usage()
	res.set(keyIdle, mib(idle.rss))

	proto := map[string]string{"h1": "--http1.1", "h2": "--http2"}[cs]
	tctx, cancel := context.WithTimeout(ctx, transferTimeout(f.size))
	defer cancel()
	start := time.Now()
	version, err := curlTLS(tctx, curl, proto, base+f.name, f.size)
	wall := time.Since(start)
	var sent int64
	if err == nil {
		sent = f.size
		res.note("version", version)
		res.set(keyWall, wall.Seconds())
		res.set(keyMBps, float64(sent)/1e6/wall.Seconds())
		if cs == "h2" && version != "2" {
			err = fmt.Errorf("asked for HTTP/2, got HTTP/%s", version)
		}
	}
	res.fail(err)
	r.end(in, idle, &res, sent)
	return res
}

// curlTLS downloads url with curl over TLS without checking the
// certificate, with proto (--http1.1 or --http2), and checks the answer:
// 200 with size bytes. It returns the HTTP version curl used.
func curlTLS(ctx context.Context, curl, proto, url string, size int64) (string, error) {
	out, err := exec.CommandContext(ctx, curl, "-sSk", proto, "-o", "/dev/null", "-w", "%{http_code} %{size_download} %{http_version}", url).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("curl %s: %v: %s", proto, err, strings.TrimSpace(string(out)))
	}
	fields := strings.Fields(string(out))
	if len(fields) != 3 {
		return "", fmt.Errorf("curl %s: unexpected output %q", proto, out)
	}
	got, _ := strconv.ParseInt(fields[1], 10, 64)
	if fields[0] != "200" || got != size {
		return "", fmt.Errorf("GET %s: answered %s with %d bytes; want 200 with %d", url, fields[0], got, size)
	}
	return fields[2], nil
}

// selfSigned makes a P-256 certificate for 127.0.0.1 and localhost, valid
// for a day, and its key, both PEM.
func selfSigned() (cert, key string, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "largo bench"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		return "", "", err
	}
	kd, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return "", "", err
	}
	cert = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	key = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd}))
	return cert, key, nil
}
