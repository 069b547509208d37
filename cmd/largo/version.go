package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// buildVersion is what a binary knows of its own build.
type buildVersion struct {
	version    string // the module's version, else the commit's first 12 hex digits, else "devel"
	commit     string // the full commit, or "unknown"
	commitTime string // RFC 3339, or "" when unknown
	dirty      bool   // built from a work tree with uncommitted changes
	goVersion  string
}

// readVersion reads the build information the Go toolchain stamps into
// every binary: the module version for `go install largo@vX`, the VCS
// settings for a build from a checkout.
func readVersion(bi *debug.BuildInfo, ok bool) buildVersion {
	v := buildVersion{version: "devel", commit: "unknown"}
	if !ok || bi == nil {
		return v
	}
	v.goVersion = bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.commit = s.Value
		case "vcs.time":
			v.commitTime = s.Value
		case "vcs.modified":
			v.dirty = s.Value == "true"
		}
	}
	switch {
	case bi.Main.Version != "" && bi.Main.Version != "(devel)":
		v.version = bi.Main.Version
	case v.commit != "unknown":
		v.version = v.commit[:min(12, len(v.commit))]
		if v.dirty {
			v.version += "-dirty"
		}
	}
	return v
}

// String is the one-line form `largo --version` prints.
func (v buildVersion) String() string {
	return fmt.Sprintf("largo %s (commit %s%s, %s)", v.version, v.commit, v.dirtyText(), v.goVersion)
}

func (v buildVersion) dirtyText() string {
	if v.dirty {
		return ", modified"
	}
	return ""
}

// ownVersion is this binary's version.
func ownVersion() buildVersion {
	return readVersion(debug.ReadBuildInfo())
}

func newVersion(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version of this binary",
		Long: `Print what this binary knows of its build: its version (the module version
when installed with go install largo@VERSION, else the commit it was built
from), the commit and its time, whether the work tree had uncommitted
changes, and the Go version that built it. largo --version prints the same
on one line.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			v := ownVersion()
			commitTime := v.commitTime
			if commitTime == "" {
				commitTime = "unknown"
			}
			fmt.Fprintf(e.stdout, "version:     %s\ncommit:      %s\ncommit time: %s\nmodified:    %t\ngo:          %s\n",
				v.version, v.commit, commitTime, v.dirty, v.goVersion)
			return nil
		},
	}
	documentEnv(cmd.Flags())
	return cmd
}
