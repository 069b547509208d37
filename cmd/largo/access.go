package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"

	"largo"
	"largo/auth"
	"largo/serve"
)

// accessConfig is what `largo serve` is told of who may do what.
type accessConfig struct {
	accessFile   string
	tokenFile    string
	shareKeyFile string
	hosts        []string
	corsOrigins  []string
}

// shareKeyName is the state key of the share key a store keeps.
const shareKeyName = "share.key"

// setUpAccess puts the access policy in hcfg: the access file's, or the
// one-user flags' (anyone reads; the token, given, read from a file or
// generated, writes; or, open, anyone writes), the host names a loopback
// server answers, and the share key. It reports whether writes are on.
func setUpAccess(ctx context.Context, e *env, logger *slog.Logger, cfg *serveConfig, st largo.Store, hcfg *serve.Config) (writes bool, err error) {
	ac := &cfg.access
	if ac.tokenFile != "" {
		if cfg.token != "" {
			return false, usageErr(errors.New("--token and --token-file: give one"))
		}
		b, err := os.ReadFile(ac.tokenFile)
		if err != nil {
			return false, usageErr(fmt.Errorf("--token-file: %v", pathErrText(err)))
		}
		if cfg.token = strings.TrimSpace(string(b)); len(cfg.token) < 16 {
			return false, usageErr(errors.New("--token-file: the token must be at least 16 characters"))
		}
		cfg.upload = true
	}
	var p *auth.Policy
	switch {
	case ac.accessFile != "":
		if cfg.token != "" || cfg.uploadOpen {
			return false, usageErr(errors.New("--access and --token or --upload-open: the access file names every user"))
		}
		if p, err = auth.LoadFile(ac.accessFile); err != nil {
			return false, usageErr(err)
		}
		writes = true
		logger.Info("access rules loaded", "file", ac.accessFile, "users", p.Users())
	case cfg.uploadOpen && cfg.token != "":
		return false, usageErr(errors.New("--upload-open and --token contradict each other: choose one"))
	case cfg.uploadOpen:
		fmt.Fprintln(e.stdout, "largo: WARNING: --upload-open: anyone who reaches this server can write, replace and delete files")
		logger.Warn("writes are open to anyone: no token is required")
		p, writes = auth.OneUser("", true), true
	case cfg.upload:
		if cfg.token == "" {
			cfg.token = auth.Generate()
			fmt.Fprintf(e.stdout, "largo: upload token (generated, shown once): %s\n", cfg.token)
		}
		p, writes = auth.OneUser(cfg.token, false), true
	default:
		p = auth.OneUser("", false)
	}
	hcfg.Access = auth.New(p, nil)
	hcfg.Hosts = hostNames(cfg.listen, ac.hosts)
	hcfg.CORSOrigins = ac.corsOrigins
	if hcfg.ShareKey, err = shareKey(ctx, ac, p, st, writes); err != nil {
		return false, err
	}
	return writes, nil
}

// hostNames is what Config.Hosts should be for a server listening on
// listen: on a loopback address, the loopback names and the extra ones;
// elsewhere nil (any name), unless names were given.
func hostNames(listen string, extra []string) []string {
	host, _, _ := net.SplitHostPort(listen)
	ip := net.ParseIP(host)
	loopback := host == "localhost" || ip != nil && ip.IsLoopback()
	if !loopback && len(extra) == 0 {
		return nil
	}
	var names []string
	if loopback {
		names = append(names, serve.LoopbackHosts...)
	}
	for _, h := range extra {
		names = append(names, strings.ToLower(strings.TrimSuffix(h, ".")))
	}
	return names
}

// shareKey returns the key of share links: the access file's, the
// --share-key-file's, or the one the store keeps in its state area, which
// every instance serving the store shares; with create, it is made if
// there is none yet (the first start with writes on, or largo share). nil
// when none can be had: share links are then off.
func shareKey(ctx context.Context, ac *accessConfig, p *auth.Policy, st largo.Store, create bool) ([]byte, error) {
	switch {
	case p.ShareKey != nil:
		return p.ShareKey, nil
	case ac.shareKeyFile != "":
		k, err := auth.ReadKeyFile(ac.shareKeyFile)
		if err != nil {
			return nil, usageErr(err)
		}
		return k, nil
	}
	sk, ok := st.(largo.StateKeeper)
	if !ok {
		return nil, nil
	}
	state := sk.State()
	k, err := state.Get(ctx, shareKeyName)
	if errors.Is(err, largo.ErrNotFound) && create {
		k = make([]byte, 32)
		rand.Read(k)
		err = state.Put(ctx, shareKeyName, k)
	}
	if err != nil || len(k) < 32 {
		return nil, nil // a read-only folder: no share links
	}
	return k, nil
}

// reloadAccess reads the access file again on each reload signal, until
// ctx is done; a file with a mistake leaves the rules in force as they
// were.
func reloadAccess(ctx context.Context, e *env, logger *slog.Logger, file string, a *auth.Access) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.reload:
		}
		p, err := auth.LoadFile(file)
		if err != nil {
			logger.Error("access file not reloaded: the rules in force stay", "err", err)
			continue
		}
		a.Reload(p)
		logger.Info("access rules reloaded", "file", file, "users", p.Users())
	}
}
