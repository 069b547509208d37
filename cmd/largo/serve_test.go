package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"largo/listing"
)

// TestListingConfig: the listing flags fill listing.Config, from the
// command line or from LARGO_* variables, and bounds that cannot work
// are the user's to fix, in one line naming the flag.
func TestListingConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	cfg := &serveConfig{listingMemory: 1 << 20, listingBudget: 8 << 20, listingTemp: dir}
	lc, err := listingConfig(cfg)
	if err != nil || lc.Max != 1<<20 || lc.Dir != dir || lc.Budget == nil || !lc.Budget.TryTake(8<<20) || lc.Budget.TryTake(1) {
		t.Fatalf("listingConfig = %+v, %v", lc, err)
	}
	for _, bad := range []serveConfig{
		{listingMemory: 64 << 10, listingBudget: 8 << 20},
		{listingMemory: 4 << 20, listingBudget: 1 << 20},
		{listingMemory: 4 << 20, listingBudget: 32 << 20, listingTemp: file},
		{listingMemory: 4 << 20, listingBudget: 32 << 20, listingTemp: filepath.Join(dir, "missing")},
	} {
		if _, err := listingConfig(&bad); err == nil || !strings.Contains(err.Error(), "--listing-") {
			t.Errorf("%+v: %v; want an error naming the flag", bad, err)
		}
	}

	// Through the command line and the environment: a usage error before
	// serving anything.
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--listing-memory", "1KiB"}, nil, "--listing-memory"},
		{nil, map[string]string{"LARGO_LISTING_BUDGET": "1MiB"}, "--listing-budget"},
		{nil, map[string]string{"LARGO_LISTING_TEMP_DIR": file}, "--listing-temp-dir"},
	} {
		var out, errb strings.Builder
		e := &env{stdout: &out, stderr: &errb, getenv: func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }}
		err := run(context.Background(), append([]string{"serve", dir, "--listen", "127.0.0.1:0"}, c.args...), e)
		if exitCode(err) != exitUsage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: %v (exit %d); want a usage error naming %s", c.args, c.env, err, exitCode(err), c.want)
		}
	}
	if listing.MinMax != 256<<10 {
		t.Errorf("listing.MinMax %d: the help says 256KiB", listing.MinMax)
	}
}

// TestServeHelp: largo serve --help is short: the common flags, grouped,
// and where the others are; --help-all is the whole help, every flag.
func TestServeHelp(t *testing.T) {
	help := func(arg string) string {
		var out bytes.Buffer
		if err := run(context.Background(), []string{"serve", arg}, quietEnv(&out, io.Discard)); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	short := help("--help")
	if lines := strings.Count(short, "\n"); lines > 50 {
		t.Errorf("serve --help is %d lines", lines)
	}
	shown := 0
	for _, g := range commonServeFlags {
		if !strings.Contains(short, "\n"+g.group+":\n") {
			t.Errorf("serve --help lacks the group %q", g.group)
		}
		for _, f := range g.flags {
			if strings.Contains(short, "  --"+f[0]+" ") {
				shown++
			}
		}
	}
	if shown != 15 || !strings.Contains(short, "--help-all") || !strings.Contains(short, "docs/serving.md") || strings.Contains(short, "--s3-part-size") {
		t.Errorf("serve --help shows %d flags:\n%s", shown, short)
	}
	all := help("--help-all")
	for _, want := range []string{"--s3-part-size", "--hook-pre-upload", "--digest-rate", "Bandwidth caps"} {
		if !strings.Contains(all, want) {
			t.Errorf("serve --help-all lacks %q", want)
		}
	}
}
