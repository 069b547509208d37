package lab

import (
	"os/exec"
	"strings"
	"testing"
)

func TestParsePeer(t *testing.T) {
	tests := []struct {
		in, name, command, err string
	}{
		{in: "py=python3 -m http.server {port} --directory {dir}", name: "py", command: "python3 -m http.server {port} --directory {dir}"},
		{in: " my server = serve --port={port}", name: "my server", command: "serve --port={port}"},
		{in: "x=serve {dir}", err: "must listen on {port}"},
		{in: "=cmd {port}", err: "NAME=COMMAND"},
		{in: "x=", err: "NAME=COMMAND"},
		{in: "largo=largo serve --listen :{port}", err: "taken"},
		{in: "apache", err: "not a preset"},
	}
	for _, tt := range tests {
		srv, err := ParsePeer(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParsePeer(%q) error %v; want one naming %q", tt.in, err, tt.err)
		case tt.err == "" && (err != nil || srv.Name != tt.name || srv.Command != tt.command):
			t.Errorf("ParsePeer(%q) = %+v, %v", tt.in, srv, err)
		}
	}
	for _, name := range Presets() {
		srv, err := ParsePeer(name)
		prog := presetPrograms[name][0]
		if _, lerr := exec.LookPath(prog); lerr != nil {
			if err == nil || !strings.Contains(err.Error(), "apt-get install") {
				t.Errorf("preset %s without %s: %v", name, prog, err)
			}
			continue
		}
		if err != nil || srv.Name != name || !strings.Contains(srv.Command, "{port}") && !strings.Contains(srv.Files["nginx.conf"], "{port}") {
			t.Errorf("preset %s: %+v, %v", name, srv, err)
		}
	}
}

func TestExpand(t *testing.T) {
	vals := map[string]string{"{dir}": "/data/my files", "{port}": "8080", "{tmp}": "/tmp/x'y"}
	got := expand("serve {dir} --port {port} --state {tmp}/s", vals, true)
	want := `serve '/data/my files' --port 8080 --state '/tmp/x'\''y'/s`
	if got != want {
		t.Fatalf("expand = %s; want %s", got, want)
	}
	if got := expand("root {dir};", vals, false); got != "root /data/my files;" {
		t.Fatalf("unquoted expand = %s", got)
	}
	out, err := exec.Command("/bin/sh", "-c", "printf '%s|' "+expand("{dir} {tmp}", vals, true)).Output()
	if err != nil || string(out) != "/data/my files|/tmp/x'y|" {
		t.Fatalf("the shell read %q, %v", out, err)
	}
}

func TestHostilePresets(t *testing.T) {
	conf := nginxHostile(nginxConf)
	for _, want := range []string{"client_header_timeout {idle};", "client_body_timeout {idle};", "keepalive_timeout {idle};", "worker_connections 10000;", "worker_rlimit_nofile 20000;"} {
		if !strings.Contains(conf, want) {
			t.Errorf("nginx's hostile configuration lacks %q", want)
		}
	}
	for _, want := range []string{"read_header {idle}", "read_body {idle}", "idle {idle}", "http://127.0.0.1:{port}"} {
		if !strings.Contains(caddyHostile, want) {
			t.Errorf("Caddy's hostile configuration lacks %q", want)
		}
	}
}
