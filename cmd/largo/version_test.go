package main

import (
	"bytes"
	"context"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestReadVersion(t *testing.T) {
	commit := "0123456789abcdef0123456789abcdef01234567"
	vcs := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: commit},
		{Key: "vcs.time", Value: "2026-12-01T18:00:00Z"},
	}
	for _, c := range []struct {
		name     string
		bi       *debug.BuildInfo
		ok       bool
		want     buildVersion
		wantLine string
	}{
		{"no build info", nil, false, buildVersion{version: "devel", commit: "unknown"}, "largo devel (commit unknown, )"},
		{"module version", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}}, true,
			buildVersion{version: "v1.2.3", commit: "unknown", goVersion: "go1.26.8"}, "largo v1.2.3 (commit unknown, go1.26.8)"},
		{"checkout", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs}, true,
			buildVersion{version: "0123456789ab", commit: commit, commitTime: "2026-12-01T18:00:00Z", goVersion: "go1.26.8"},
			"largo 0123456789ab (commit " + commit + ", go1.26.8)"},
		{"modified checkout", &debug.BuildInfo{GoVersion: "go1.26.8", Settings: append(vcs[:3:3], debug.BuildSetting{Key: "vcs.modified", Value: "true"})}, true,
			buildVersion{version: "0123456789ab-dirty", commit: commit, commitTime: "2026-12-01T18:00:00Z", dirty: true, goVersion: "go1.26.8"},
			"largo 0123456789ab-dirty (commit " + commit + ", modified, go1.26.8)"},
	} {
		got := readVersion(c.bi, c.ok)
		if got != c.want {
			t.Errorf("%s: readVersion = %+v, want %+v", c.name, got, c.want)
		}
		if got.String() != c.wantLine {
			t.Errorf("%s: line %q, want %q", c.name, got.String(), c.wantLine)
		}
	}
}

// TestVersionCommand runs `largo version` and `largo --version` in-process:
// both name the Go version that built the test binary.
func TestVersionCommand(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errb bytes.Buffer
		env := quietEnv(&out, &errb)
		if err := run(context.Background(), args, env); err != nil {
			t.Fatalf("%v: %v (%s)", args, err, errb.String())
		}
		if !strings.Contains(out.String(), runtime.Version()) {
			t.Errorf("%v printed %q, without %s", args, out.String(), runtime.Version())
		}
	}
	var out bytes.Buffer
	env := quietEnv(&out, &out)
	if err := run(context.Background(), []string{"version"}, env); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"version:", "commit:", "commit time:", "modified:", "go:"} {
		if !strings.Contains(out.String(), field) {
			t.Errorf("largo version lacks %q:\n%s", field, out.String())
		}
	}
}
