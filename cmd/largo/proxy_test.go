package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseNetwork(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"10.0.0.1", "10.0.0.1/32"},
		{"10.1.2.3/8", "10.0.0.0/8"},
		{"::1", "::1/128"},
		{"fd00::/8", "fd00::/8"},
		{"::ffff:10.0.0.1", "10.0.0.1/32"},
	} {
		n, err := parseNetwork(tt.in)
		if err != nil || n.String() != tt.want {
			t.Errorf("%s: %v, %v; want %s", tt.in, n, err, tt.want)
		}
	}
	for _, in := range []string{"", "proxy.example", "10.0.0.0/33", "10.0.0.1/", "fe80::1%eth0", "10.0.0.256"} {
		if n, err := parseNetwork(in); err == nil {
			t.Errorf("%q: %v; want an error", in, n)
		}
	}
}

// TestProxyFlagsUsage: the flags of a proxy in front that contradict
// each other, or lack what they need, are the user's to fix, said in
// one line before anything is served.
func TestProxyFlagsUsage(t *testing.T) {
	dir := t.TempDir()
	access := filepath.Join(t.TempDir(), "access.toml")
	os.WriteFile(access, []byte("[[rule]]\npath = \"/\"\nusers = [\"*\"]\nallow = [\"read\"]\n"), 0o600)
	for _, args := range [][]string{
		{"--trusted-proxy", "proxy.example"},
		{"--trusted-proxy", "10.0.0.0/33"},
		{"--proxy-protocol"},
		{"--identity-header", "Remote-User", "--access", access},
		{"--groups-header", "Remote-Groups", "--access", access},
		{"--trusted-proxy", "127.0.0.1", "--identity-header", "Remote-User"},
		{"--trusted-proxy", "127.0.0.1", "--access", access, "--identity-header", "Remote User"},
		{"--trusted-proxy", "127.0.0.1", "--access", access, "--identity-header", "Authorization"},
		{"--trusted-proxy", "127.0.0.1", "--access", access, "--groups-header", "Remote-Groups"},
		{"--trusted-proxy", "127.0.0.1", "--forwarded-header", "X-Real-IP"},
	} {
		// A context already done: were the flags taken, the server would
		// stop at once rather than serve.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var out, errb strings.Builder
		err := run(ctx, append([]string{"serve", dir, "--listen", "127.0.0.1:0"}, args...), quietEnv(&out, &errb))
		if exitCode(err) != exitUsage || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v (exit %d); want a one-line usage error", args, err, exitCode(err))
		}
	}
}
