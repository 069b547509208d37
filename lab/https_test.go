package lab

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"largo/internal/testenv"
)

// TestHTTPSPieces serves a file over TLS with the lab's certificate, on
// HTTP/1.1 and HTTP/2, and fetches it with curl as the scenario does: the
// version curl reports, and a wrong size or status refused.
func TestHTTPSPieces(t *testing.T) {
	curl := testenv.Program(t, "curl")
	certPEM, keyPEM, err := selfSigned()
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("x", 100000)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/f" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(body))
	}))
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()
	ctx := context.Background()
	for proto, want := range map[string]string{"--http1.1": "1.1", "--http2": "2"} {
		v, err := curlTLS(ctx, curl, proto, srv.URL+"/f", int64(len(body)))
		if err != nil || v != want {
			t.Errorf("%s: HTTP/%s, %v; want HTTP/%s", proto, v, err, want)
		}
	}
	if _, err := curlTLS(ctx, curl, "--http2", srv.URL+"/f", int64(len(body))+1); err == nil {
		t.Error("a short body was taken as whole")
	}
	if _, err := curlTLS(ctx, curl, "--http2", srv.URL+"/missing", int64(len(body))); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a 404 was taken: %v", err)
	}
}

// TestTLSForm: the servers the lab knows over TLS, and the others
// refused rather than run over plain HTTP.
func TestTLSForm(t *testing.T) {
	for _, s := range []Server{Largo(), presets["nginx"](), presets["caddy"]()} {
		ts, ok := tlsForm(s)
		if !ok || !strings.Contains(ts.Command+strings.Join(mapValues(ts.Files), ""), "{tmp}/cert.pem") {
			t.Errorf("%s: no TLS form using the lab's certificate: %+v", s.Name, ts)
		}
	}
	for _, s := range []Server{Naive(), {Name: "largo", Command: "exec /elsewhere/largo-old serve {dir}"}, {Name: "caddy", Command: "exec caddy run --config mine"}} {
		if _, ok := tlsForm(s); ok {
			t.Errorf("%s (%s): given a TLS form", s.Name, s.Command)
		}
	}
	own := Server{Name: "old", Command: "exec /elsewhere/largo-old serve {dir} --listen 127.0.0.1:{port} --tls-cert {tmp}/cert.pem --tls-key {tmp}/key.pem"}
	if ts, ok := tlsForm(own); !ok || ts.Command != own.Command {
		t.Errorf("a peer naming the lab's certificate: %+v, %v; want it as it is", ts, ok)
	}
}

func mapValues(m map[string]string) []string {
	var vs []string
	for _, v := range m {
		vs = append(vs, v)
	}
	return vs
}
