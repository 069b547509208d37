package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"

	"largo"
	"largo/auth"
	"largo/gate"
	"largo/links"
	"largo/serve"
)

// accessConfig is what `largo serve` is told of who may do what, and of
// the proxies in front of it.
type accessConfig struct {
	accessFile   string
	tokenFile    string
	shareKeyFile string
	hosts        []string
	corsOrigins  []string

	trustedProxies []string
	forwarded      choiceValue
	proxyProtocol  bool
	identityHeader string
	groupsHeader   string
}

// newProxies reads what the flags say of the proxies in front, and
// returns their networks and what believes them: none with no
// --trusted-proxy. What is believed, and from whom, is logged.
func newProxies(logger *slog.Logger, ac *accessConfig) (*auth.Proxies, []netip.Prefix, error) {
	var trusted []netip.Prefix
	for _, s := range ac.trustedProxies {
		n, err := parseNetwork(s)
		if err != nil {
			return nil, nil, usageErr(fmt.Errorf("--trusted-proxy %s: %v", s, err))
		}
		trusted = append(trusted, n)
	}
	switch {
	case len(trusted) > 0:
	case ac.proxyProtocol:
		return nil, nil, usageErr(errors.New("--proxy-protocol: name the proxies that send it with --trusted-proxy"))
	case ac.identityHeader != "" || ac.groupsHeader != "":
		return nil, nil, usageErr(errors.New("--identity-header and --groups-header are believed only from the proxies --trusted-proxy names: give it"))
	default:
		return nil, nil, nil
	}
	if ac.identityHeader != "" && ac.accessFile == "" {
		return nil, nil, usageErr(errors.New("--identity-header names users of an access file: give --access"))
	}
	p, err := auth.NewProxies(auth.ProxyConfig{Trusted: trusted, Forwarded: ac.forwarded.value, User: ac.identityHeader, Groups: ac.groupsHeader})
	if err != nil {
		return nil, nil, usageErr(fmt.Errorf("--identity-header, --groups-header: %v", err))
	}
	logger.Info("trusting the proxies in front", "proxies", strings.Join(ac.trustedProxies, ","), "client_from", ac.forwarded.value,
		"proxy_protocol", ac.proxyProtocol, "user_from", ac.identityHeader, "groups_from", ac.groupsHeader)
	return p, trusted, nil
}

// parseNetwork reads an address (a network of one) or a network in CIDR
// notation.
func parseNetwork(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		n, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, errors.New("not a network in CIDR notation (10.0.0.0/8, fd00::/8)")
		}
		return n.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, errors.New("not an address or a network (10.0.0.1, 10.0.0.0/8, ::1)")
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// newGate returns the gate that decides every store call by the access
// policy: the access file's, or the one-user flags' (anyone reads; the
// token, given, read from a file or generated, writes; or, open, anyone
// writes), with the share links (their key, made with the first link,
// and their records in the store's state area) and how symbolic links
// are followed. It reports
// whether writes are on: with an access file, when a rule grants write or
// delete to anyone (--upload then adds nothing); else with --upload,
// --token-file or --upload-open. What is on, and for whom, is logged.
func newGate(ctx context.Context, e *env, logger *slog.Logger, cfg *serveConfig, st largo.Store) (g *gate.Gate, writes bool, err error) {
	ac := &cfg.access
	token, upload := cfg.token, cfg.upload
	if ac.tokenFile != "" {
		if token != "" {
			return nil, false, usageErr(errors.New("--token and --token-file: give one"))
		}
		b, err := os.ReadFile(ac.tokenFile)
		if err != nil {
			return nil, false, usageErr(fmt.Errorf("--token-file: %v", pathErrText(err)))
		}
		if token = strings.TrimSpace(string(b)); len(token) < 16 {
			return nil, false, usageErr(errors.New("--token-file: the token must be at least 16 characters"))
		}
		upload = true
	}
	var p *auth.Policy
	switch {
	case ac.accessFile != "":
		if token != "" || cfg.uploadOpen {
			return nil, false, usageErr(errors.New("--access and --token or --upload-open: the access file names every user"))
		}
		if p, err = auth.LoadFile(ac.accessFile); err != nil {
			return nil, false, usageErr(err)
		}
		if err := canRedirect(p, st); err != nil {
			return nil, false, usageErr(err)
		}
		writes = len(p.Granting(auth.Write|auth.Delete)) > 0
		logPolicy(logger, ac, p, upload)
	case cfg.uploadOpen && token != "":
		return nil, false, usageErr(errors.New("--upload-open and --token contradict each other: choose one"))
	case cfg.uploadOpen:
		fmt.Fprintln(e.stdout, "largo: WARNING: --upload-open: anyone who reaches this server can write, replace and delete files")
		logger.Warn("writes are open to anyone: no token is required")
		p, writes = auth.OneUser("", true), true
	case upload:
		if token == "" {
			token = auth.Generate()
			fmt.Fprintf(e.stdout, "largo: upload token (generated, shown once): %s\n", token)
		}
		p, writes = auth.OneUser(token, false), true
		logger.Info("writes on: whoever sends the token may write and delete everywhere; anyone reads")
	default:
		p = auth.OneUser("", false)
		logger.Info("writes off: anyone reads and lists (give --upload or an access file to take writes)")
	}
	symlinks, err := symlinkMode(cfg)
	if err != nil {
		return nil, false, err
	}
	access := auth.New(p, nil)
	if ac.groupsHeader != "" {
		access.GroupsFromProxy()
	}
	gc := gate.Config{Access: access, Symlinks: symlinks, LinkMaxUpload: int64(cfg.linkMaxUpload), Logger: logger}
	gc.Resolver, _ = st.(largo.Resolver)
	if sk, ok := st.(largo.StateKeeper); ok {
		ls, err := newLinks(ctx, ac, p, sk.State())
		switch {
		case ls == nil:
			return nil, false, err
		case errors.Is(err, links.ErrDamagedKey):
			return nil, false, failed(err)
		case err != nil:
			logger.Warn("share links: the share key cannot be read now; links will read it when they need it", "err", err)
		}
		gc.Links = ls
	}
	return gate.New(gc), writes, nil
}

// logPolicy says at start-up what an access file turns on, and for whom.
func logPolicy(logger *slog.Logger, ac *accessConfig, p *auth.Policy, upload bool) {
	file := ac.accessFile
	logger.Info("access rules loaded", "file", file, "users", p.Users(), "rules", p.Rules())
	if n := p.ProxyOnly(); n > 0 && ac.identityHeader == "" {
		logger.Warn("users without a password or a token sign in only through a trusted proxy, and --identity-header is not given: they cannot sign in", "file", file, "users", n)
	}
	if p.AnyProxyUser() {
		logger.Info("a trusted proxy may sign in any name, listed in the access file or not", "file", file)
	}
	if p.Rules() == 0 {
		logger.Warn("the access file has no rule: every request is refused (401 or 403)", "file", file)
	}
	if w := p.Granting(auth.Write | auth.Delete); len(w) > 0 {
		logger.Info("writes on, as the access file's rules grant them", "where", strings.Join(w, "; "))
	} else {
		logger.Info("writes off: no rule of the access file grants write or delete")
	}
	if upload {
		logger.Info("--upload adds nothing to an access file: its rules decide who writes")
	}
	logRedirects(logger, p)
}

// symlinkMode is how the gate follows symbolic links: --symlinks, or by
// default within their own folder when an access file is in force (its
// rules could treat a link's target differently from the link), else
// everywhere inside the store. Whatever the mode, a name is judged as it
// resolves as well as how it is spelled.
func symlinkMode(cfg *serveConfig) (gate.Symlinks, error) {
	switch {
	case cfg.symlinks.value != "":
		return gate.ParseSymlinks(cfg.symlinks.value)
	case cfg.access.accessFile != "":
		return gate.Within, nil
	}
	return gate.Follow, nil
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

// newLinks returns the share links kept in state, signed with the key
// the access file or --share-key-file gives, else with the one the state
// area keeps (made with the first link, by largo share or the page). The
// key already kept is read now, so that a damaged one is an error at
// start (links.ErrDamagedKey), and one that cannot be read a warning:
// the links are returned with either; nil only for a key file that
// cannot be read.
func newLinks(ctx context.Context, ac *accessConfig, p *auth.Policy, state largo.State) (*links.Links, error) {
	key := p.ShareKey
	if key == nil && ac.shareKeyFile != "" {
		k, err := auth.ReadKeyFile(ac.shareKeyFile)
		if err != nil {
			return nil, usageErr(err)
		}
		key = k
	}
	ls := links.New(links.Config{State: state, Key: key})
	return ls, ls.Load(ctx)
}

// reloadAccess reads the access file again on each reload signal, until
// ctx is done; a file with a mistake leaves the rules in force as they
// were.
func reloadAccess(ctx context.Context, e *env, logger *slog.Logger, ac *accessConfig, a *auth.Access) {
	file := ac.accessFile
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
		logPolicy(logger, ac, p, false)
	}
}
