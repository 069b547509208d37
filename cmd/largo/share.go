package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"largo"
	"largo/auth"
)

// shareConfig is everything `largo share` is told.
type shareConfig struct {
	serveConfig
	url      string
	expires  time.Duration
	write    bool
	password bool
}

func newShare(e *env) *cobra.Command {
	cfg := &shareConfig{}
	cmd := &cobra.Command{
		Use:   "share PATH",
		Short: "Print a signed, expiring link to a file or folder",
		Long: `Print a share link to PATH (a file, or a folder and everything below it) that
works without an account until it expires. It is signed with the share key:
the access file's, --share-key-file's, or the one the served folder or
bucket keeps in its state folder (made now if there is none yet, and used
by every largo serving it). Rotating the key revokes every link.

--write makes a drop box instead: the link uploads new files into the
folder PATH, and never reads or replaces anything. --password asks for a
password the link will need too (as the password of basic auth, with any
user name).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runShare(cmd, e, cfg, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.dir, "dir", ".", "the served folder (where the share key is kept), unless --store names a bucket")
	addStoreFlags(f, &cfg.serveConfig, "where the files are: s3://BUCKET/PREFIX for a bucket (default: --dir)")
	f.StringVar(&cfg.access.accessFile, "access", "", "the server's access file (its share key, if it names one)")
	f.StringVar(&cfg.access.shareKeyFile, "share-key-file", "", "the share key's file, as given to largo serve")
	f.StringVar(&cfg.url, "url", "http://127.0.0.1:8080", "the server's address, as clients reach it")
	f.DurationVar(&cfg.expires, "expires", 24*time.Hour, "how long the link works")
	f.BoolVar(&cfg.write, "write", false, "a drop box: the link uploads new files into the folder PATH, never reads")
	f.BoolVar(&cfg.password, "password", false, "ask for a password the link will need too")
	documentEnv(f)
	return cmd
}

func runShare(cmd *cobra.Command, e *env, cfg *shareConfig, target string) error {
	if cfg.expires <= 0 {
		return usageErr(errors.New("--expires must be positive"))
	}
	name, err := largo.ParseName("/" + strings.TrimPrefix(target, "/"))
	if err != nil || largo.Reserved(name) {
		return usageErr(fmt.Errorf("PATH %q: not a path largo serves", target))
	}
	ctx := cmd.Context()
	st, _, err := openStore(ctx, e, &cfg.serveConfig)
	if err != nil {
		return err
	}
	defer st.Close()
	in, err := st.Stat(ctx, name)
	switch {
	case err != nil:
		return usageErr(fmt.Errorf("PATH %s: %v", target, pathErrText(err)))
	case cfg.write && !in.IsDir:
		return usageErr(fmt.Errorf("--write: %s is not a folder", target))
	}
	p := auth.OneUser("", false)
	if cfg.access.accessFile != "" {
		if p, err = auth.LoadFile(cfg.access.accessFile); err != nil {
			return usageErr(err)
		}
	}
	key, err := shareKey(ctx, &cfg.access, p, st, true)
	if err != nil {
		return err
	}
	if key == nil {
		return failed(errors.New("no share key: the store keeps none and cannot take one; give --share-key-file"))
	}
	var password string
	if cfg.password {
		if password, err = readSecret(e, "Link password: ", true); err != nil {
			return err
		}
	}
	s := auth.Share{Path: name, Write: cfg.write, File: !in.IsDir, Expires: time.Now().Add(cfg.expires).Truncate(time.Second)}
	token := auth.SignShare(key, s, password)
	fmt.Fprintln(e.stdout, strings.TrimSuffix(cfg.url, "/")+s.URLPath(token))
	return nil
}
