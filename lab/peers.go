package lab

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// nodeServer is the Node.js peer: a streaming pipeline() file server.
//
//go:embed peers/pipeline.js
var nodeServer string

// goFileServer is the Go standard library's peer: http.FileServer, built
// by the go command when the peer starts.
//
//go:embed peers/fileserver/main.go
var goFileServer string

// nginxConf is the nginx peer's configuration: sendfile on, gzip for text
// at nginx's default level, PUT through the WebDAV module, everything
// (pid, logs, temporary bodies) in the server's scratch folder. .log files
// are served as text so that gzip applies to them, as on a log server.
// The served folder itself is listed by the autoindex module, as HTML, or
// as JSON (autoindex_format json) for a request that accepts
// application/json, as largo's listing answers: the format cannot follow
// a request's headers, so such a request is sent on to an internal
// location of the same folder whose format is JSON.
const nginxConf = `daemon off;
{user}worker_processes auto;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events { worker_connections 4096; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log {tmp}/access.log;
    sendfile on;
    tcp_nopush on;
    gzip on;
    gzip_types text/plain text/css application/json text/javascript image/svg+xml;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    client_max_body_size 0;
    server {
        listen 127.0.0.1:{port};
        root {dir};
        location / {
            dav_methods PUT;
            dav_access user:rw group:r all:r;
        }
        location ~ \.log$ {
            types { }
            default_type text/plain;
        }
        location = / {
            autoindex on;
            if ($http_accept ~ "application/json") {
                rewrite ^ /.json/ last;
            }
        }
        location = /.json/ {
            internal;
            alias {dir}/;
            autoindex on;
            autoindex_format json;
        }
    }
}
`

// nginxHostile turns nginxConf into the hostile scenario's configuration:
// the idle timeout on the head, the body, keep-alive and sending, and
// room for ten thousand connections per worker.
func nginxHostile(conf string) string {
	conf = strings.Replace(conf, "events { worker_connections 4096; }",
		"worker_rlimit_nofile 20000;\nevents { worker_connections 10000; }", 1)
	return strings.Replace(conf, "    sendfile on;\n", `    sendfile on;
    client_header_timeout {idle};
    client_body_timeout {idle};
    keepalive_timeout {idle};
    send_timeout {idle};
`, 1)
}

// caddyHostile is the Caddy peer's configuration in the hostile scenario:
// the file server of caddy file-server, with the idle timeout on the
// head, the whole request (read_body is Go's ReadTimeout) and keep-alive.
const caddyHostile = `{
	admin off
	auto_https off
	servers {
		timeouts {
			read_header {idle}
			read_body {idle}
			idle {idle}
		}
	}
}
http://127.0.0.1:{port} {
	root * {dir}
	file_server
}
`

// presets are the peers known by name alone.
var presets = map[string]func() Server{
	"nginx": func() Server {
		// A root master would run its workers as nobody, who cannot read
		// the scratch folder nor write uploads there.
		user := ""
		if os.Geteuid() == 0 {
			user = "user root root;\n"
		}
		conf := strings.Replace(nginxConf, "{user}", user, 1)
		return Server{
			Name:    "nginx",
			Command: "exec nginx -p {tmp} -e {tmp}/error.log -c {tmp}/nginx.conf",
			Hostile: "exec nginx -p {tmp} -e {tmp}/error.log -c {tmp}/nginx-hostile.conf",
			Files:   map[string]string{"nginx.conf": conf, "nginx-hostile.conf": nginxHostile(conf)},
		}
	},
	"caddy": func() Server {
		return Server{
			Name:    "caddy",
			Command: "exec caddy file-server --root {dir} --listen 127.0.0.1:{port}",
			Hostile: "exec caddy run --adapter caddyfile --config {tmp}/Caddyfile",
			Files:   map[string]string{"Caddyfile": caddyHostile},
		}
	},
	"fileserver": func() Server {
		// Built where the lab's own go command caches its builds (the
		// server's HOME is its scratch folder): once cached, a start
		// only links.
		env := ""
		if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil && len(strings.TrimSpace(string(out))) > 0 {
			env = "GOCACHE=" + shellQuote(strings.TrimSpace(string(out))) + " "
		}
		return Server{
			Name:    "fileserver",
			Command: env + "go build -o fileserver main.go && exec ./fileserver {dir} {port}",
			Files:   map[string]string{"main.go": goFileServer},
		}
	},
	"rclone": func() Server {
		// A folder over HTTP; in the bucket scenario, rclone's s3
		// backend reading the bucket directly.
		return Server{
			Name:    "rclone",
			Command: "exec rclone serve http {dir} --addr 127.0.0.1:{port}",
		}
	},
	"node": func() Server {
		return Server{
			Name:    "node",
			Command: "exec node {tmp}/pipeline.js {dir} {port}",
			Files:   map[string]string{"pipeline.js": nodeServer},
		}
	},
}

// presetPrograms name the program each preset runs, and the Debian
// package that has it.
var presetPrograms = map[string][2]string{
	"nginx":      {"nginx", "nginx-light"},
	"caddy":      {"caddy", "caddy"},
	"node":       {"node", "nodejs"},
	"fileserver": {"go", "golang-go"},
	"rclone":     {"rclone", "rclone"},
}

// Presets returns the names of the peers known by name alone.
func Presets() []string {
	var names []string
	for n := range presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ParsePeer reads a --peer value: a preset's name (nginx, caddy, node, or
// fileserver: Go's http.FileServer, built with the go command), or
// NAME=COMMAND, a command run by /bin/sh with the placeholders {dir},
// {port} and {tmp} (see Server.Command). A preset whose program is not
// installed is an error that names its package.
func ParsePeer(s string) (Server, error) {
	name, command, found := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !found {
		preset, ok := presets[name]
		if !ok {
			return Server{}, fmt.Errorf("peer %q: not a preset (%s) nor NAME=COMMAND", s, strings.Join(Presets(), ", "))
		}
		prog := presetPrograms[name]
		if _, err := exec.LookPath(prog[0]); err != nil {
			return Server{}, fmt.Errorf("peer %s: %s not found (apt-get install %s)", name, prog[0], prog[1])
		}
		return preset(), nil
	}
	command = strings.TrimSpace(command)
	switch {
	case name == "" || command == "":
		return Server{}, errors.New("peer: want NAME=COMMAND, both non-empty")
	case name == "largo" || name == "naive":
		return Server{}, fmt.Errorf("peer %q: the name is taken by the lab's own server", name)
	case !strings.Contains(command, "{port}"):
		return Server{}, fmt.Errorf("peer %s: the command must listen on {port}", name)
	}
	return Server{Name: name, Command: command}, nil
}
