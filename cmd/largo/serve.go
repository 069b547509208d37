package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"largo"
	"largo/auth"
	"largo/encode"
	"largo/internal/logwriter"
	"largo/internal/ready"
	"largo/limit"
	"largo/listing"
	"largo/metrics"
	"largo/record"
	"largo/resumable"
	"largo/s3"
	"largo/serve"
	"largo/sidecar"
	"largo/transfer"
)

// serveConfig is everything `largo serve` is told.
type serveConfig struct {
	dir           string
	store         string
	s3Endpoint    string
	s3Region      string
	s3VirtualHost bool
	s3PartSize    sizeValue
	s3PartConc    int
	slices        sliceConfig
	s3Engine      engineFlags
	listen        string
	publicURL     string
	adminListen   string
	idleTimeout   time.Duration
	minRate       sizeValue
	rates         rateFlags
	maxConns      int
	maxConnsPerIP int
	drainTimeout  time.Duration
	// shutdownTimeout bounds the server's own work at a stop, after the
	// transfers: its workers' end, the quota's last sync, the release
	// of the hooks' outbox.
	shutdownTimeout time.Duration
	tlsCert         string
	tlsKey          string
	logFormat       choiceValue
	compress        choiceValue
	compressLevel   choiceValue
	compressMax     int
	sidecars        choiceValue
	digestRate      perSecondValue
	listingMemory   sizeValue
	listingBudget   sizeValue
	listingTemp     string
	fileCache       fileCacheConfig

	upload       bool
	token        string
	uploadOpen   bool
	maxUpload    sizeValue
	reserve      sizeValue
	noMkdir      bool
	uploadExpiry time.Duration
	expirySweep  time.Duration
	ietfVersions string
	webdav       bool

	symlinks      choiceValue
	linkMaxUpload sizeValue

	access accessConfig

	quota quotaConfig
	hooks hookConfig
	s3api s3Config
}

// defaultLinkMaxUpload is the largest file a write through a share link
// stores unless --link-max-upload says otherwise: a stranger holding a
// drop box cannot fill the disk with one announced body.
const defaultLinkMaxUpload = 10 << 30

// Defaults that keep one client from holding the server: one address
// takes at most a few percent of --max-conns (a browser opens six
// connections to a host, a download accelerator sixteen), and a body or
// answer slower than a kilobyte a second on average, past the first idle
// timeout, is cut.
const (
	defaultMaxConnsPerIP = 256
	defaultMinRate       = 1 << 10
)

// Fixed server limits: they protect the server and need no tuning.
const (
	readHeaderTimeout = 10 * time.Second
	maxHeaderBytes    = 64 << 10 // also bounds an HTTP/2 header list
	// lingerTime is the most a connection closed under a client still
	// sending a body it was refused reads and discards (package limit),
	// so that the client reads its answer instead of a reset.
	lingerTime = 2 * time.Second
)

// headerTimeout is how long a request's head may take, from its first
// byte (from the connection's, for the first request): the idle timeout,
// and never more than readHeaderTimeout, which is also the bound without
// an idle timeout. A head is a few hundred bytes; a client that cannot
// send it in that time is holding the connection, not using it.
func headerTimeout(idle time.Duration) time.Duration {
	if idle > 0 {
		return min(idle, readHeaderTimeout)
	}
	return readHeaderTimeout
}

// lingerFor is how long a connection lingers (lingerTime): never longer
// than the idle timeout.
func lingerFor(idle time.Duration) time.Duration {
	if idle > 0 {
		return min(idle, lingerTime)
	}
	return lingerTime
}

// listingConfig returns the listings' bounds the flags set, or the
// user's mistake.
func listingConfig(cfg *serveConfig) (listing.Config, error) {
	mem, budget := int64(cfg.listingMemory), int64(cfg.listingBudget)
	switch {
	case mem < listing.MinMax:
		return listing.Config{}, fmt.Errorf("--listing-memory %s: at least %s", &cfg.listingMemory, largo.FormatSize(listing.MinMax))
	case budget < mem:
		return listing.Config{}, fmt.Errorf("--listing-budget %s: at least --listing-memory (%s)", &cfg.listingBudget, &cfg.listingMemory)
	}
	if cfg.listingTemp != "" {
		if fi, err := os.Stat(cfg.listingTemp); err != nil || !fi.IsDir() {
			return listing.Config{}, fmt.Errorf("--listing-temp-dir %s: not a folder", cfg.listingTemp)
		}
	}
	// One client holds at most a quarter of the budget, and never less
	// than one listing's memory.
	share := max(budget/limit.DefaultShare, mem)
	return listing.Config{Budget: limit.NewBudget(budget, share), Max: mem, Dir: cfg.listingTemp}, nil
}

// http2Config sets HTTP/2's limits explicitly rather than taking the
// library's defaults: streams per connection, the largest frame and the
// receive windows bound what one connection may make the server hold
// (header lists are bounded by MaxHeaderBytes), and a connection whose
// writes make no progress for the idle timeout is closed, as HTTP/1's
// transfers are cut.
func http2Config(idle time.Duration) *http.HTTP2Config {
	return &http.HTTP2Config{
		MaxConcurrentStreams:          100,
		MaxReadFrameSize:              64 << 10,
		MaxDecoderHeaderTableSize:     4 << 10,
		MaxEncoderHeaderTableSize:     4 << 10,
		MaxReceiveBufferPerConnection: 1 << 20,
		MaxReceiveBufferPerStream:     1 << 20,
		WriteByteTimeout:              idle,
		SendPingTimeout:               idle,
		PingTimeout:                   15 * time.Second,
	}
}

func newServe(e *env) *cobra.Command {
	cfg := &serveConfig{
		logFormat:     choiceValue{value: "text", choices: []string{"text", "json"}},
		compress:      choiceValue{value: "on", choices: []string{"on", "off"}},
		compressLevel: choiceValue{value: "fast", choices: encode.Levels},
		sidecars:      sidecarsChoice(),
		listingMemory: listing.DefaultMax,
		listingBudget: listing.DefaultBudget,
		s3PartSize:    s3.DefaultPartSize,
		minRate:       defaultMinRate,
		symlinks:      choiceValue{choices: []string{"follow", "within", "none"}},
		access:        accessConfig{forwarded: choiceValue{value: auth.XForwardedFor, choices: []string{auth.XForwardedFor, auth.Forwarded}}},
		linkMaxUpload: defaultLinkMaxUpload,
	}
	var helpAll bool
	cmd := &cobra.Command{
		Use:   "serve [DIR]",
		Short: "Serve a folder or a bucket over HTTP",
		Long: `Serve the files of DIR (default: the current folder) over HTTP, or, with
--store s3://BUCKET/PREFIX, the objects of a bucket of any S3-compatible store.

Downloads support ranges (single, multiple, suffix and open-ended), If-Range,
ETag and Last-Modified with 304 answers, and resume with curl -C -. Files and
folders whose name starts with a dot are never served. Folders are listed as
an HTML page (sortable, filterable, with archive links and, when writes are
on, an upload area), or as JSON for Accept: application/json;
?archive=zip, tar or tar.zst sends a whole folder as one archive.

Text files (HTML, CSS, JavaScript, JSON, NDJSON, CSV, XML, SVG, logs, WASM...)
of 1 KiB or more are compressed for clients that accept it (zstd, br, gzip):
from precompressed sidecars NAME.zst, NAME.br, NAME.gz that largo precompress
wrote, while they and NAME are unchanged (--sidecars any: any such file not
older than NAME), otherwise on the fly at --compress-level. A file that only
has a sidecar's name (an uploaded data.csv.gz beside data.csv) is a file of
its own. Range requests and already-compressed data (archives,
images, audio, video, PDF) are sent as they are.

Writes are off unless --upload is given, or an access file (--access) has a
rule that grants write or delete (its rules then decide every write, and
--upload adds nothing); what is on, and for whom, is logged at start-up.
Then PUT stores a file atomically
(201 or 204, with ETag and Repr-Digest), POST of a multipart form to a
folder stores each file in it, DELETE removes files and empty folders
(?recursive=1 for the others), and /_largo/uploads/ speaks tus 1.0 for
resumable uploads. A PUT (or a POST to a folder) with Upload-Complete and
an Upload-Draft-Interop-Version of --ietf-versions is a resumable upload of
the IETF draft: a 104 gives its upload URL, which takes HEAD, PATCH and
DELETE. Without an access file every write needs the token (--token,
--token-file, or one generated and printed at start-up), as a bearer token
or a basic-auth password. For users, passwords and per-path rules of who may
read, list, write and delete, give an access file (--access; see largo
passwd and largo share for passwords and share links). Every read and write
is decided by those rules at the store's door, whatever the protocol; a name
reached through a symbolic link is judged where it leads too (--symlinks).
See docs/access.md.

With --webdav the folder or bucket can be mounted as a drive (Finder,
Windows Explorer, davfs2, rclone, cadaver): PROPFIND (Depth 0 or 1),
PROPPATCH, MKCOL, COPY, MOVE, LOCK and UNLOCK at the files' URLs, behind the
same access rules; locks refuse writes of every protocol (423) and live in
the store, so instances on one bucket share them. A DELETE of a folder then
removes all it holds, as WebDAV asks. Finder's ._NAME and .DS_Store files are
accepted and discarded. See docs/webdav.md.

Bandwidth caps (--rate per transfer; --rate-per-user, --rate-per-address and
--rate-per-link, shared by every connection of their user, client address or
share link; a user's rate in the access file; a share link's max rate) hold
downloads and uploads alike, each direction on its own, so that opening more
connections gets a client no more; the strictest cap that applies governs,
and a capped download is still sent by sendfile. See docs/serving.md.

Behind a proxy (nginx, Caddy, Traefik, an identity proxy), give its address
or network with --trusted-proxy: from there only, the client's address is
read from X-Forwarded-For (or Forwarded), from its right end, so that the
limits, the log and the sign-in failures see each client; with
--proxy-protocol a TCP proxy may name it in a PROXY protocol header instead.
A proxy's connections are not capped by --max-conns-per-ip; those that a
PROXY header names a client for are counted for that client. With
--identity-header (Remote-User), the user the proxy signed in is a user of
the access file, without a password, and --groups-header (Remote-Groups)
names their groups, which rules name as group:NAME. The proxy must set or
remove those fields on every request. See docs/deploy.md.

largo's own endpoints live under /_largo/: healthz and readyz, open to all,
and metrics, which are the operator's: read them on --admin-listen, or on
the main listener as a user that an access-file rule for /_largo/metrics
names (anyone else gets 401 or 403).
Once it accepts connections, largo writes one JSON line on standard output
for programs that start it: {"msg":"largo ready","url":URL,"addr":HOST:PORT}
(with "admin":URL when --admin-listen is given).
SIGINT or SIGTERM stops accepting connections and lets transfers in flight
finish for up to --drain-timeout (a second signal cuts them at once); then
the background work stops, and the usage counted against quotas is added
to the store's record and the hooks' outbox given up, within
--shutdown-timeout, before largo exits.

With --store s3://BUCKET/PREFIX the credentials come from AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (none: anonymous requests), the
endpoint from --s3-endpoint, else AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL
(none: Amazon S3), and the region from --s3-region, else AWS_REGION or
AWS_DEFAULT_REGION. A bucket that does not exist or refuses the credentials
is an error at start-up. Several instances may serve one bucket: they keep no
state of their own, and resumable uploads live in the bucket too. With writes
on, a start-up probe checks that the S3 server applies If-None-Match and
If-Match to writes, even under concurrent requests; where it does not
(--s3-instances), one instance only writes to the bucket, and another is
refused while it runs (docs/buckets.md lists the S3 servers and their ways).

With --s3-cache DIR, the objects downloaded are kept on the local disk in
slices of 8 MiB, up to --s3-cache-size bytes (the least recently used go
first): a slice is fetched from the bucket once however many clients want
it at once, and sent from DIR by sendfile, as a folder's files are. Slices
are kept by the object's ETag, so a changed object is fetched anew.

Writes to a bucket stream into the store: a body of known length as one PUT
(as streamed multipart parts beyond 5 GiB), a body of unknown length (chunked,
or a form's file) as parts buffered in memory, at most
--s3-part-size x --s3-part-concurrency bytes per upload (32 MiB with the
defaults). Nothing appears at the key before the body is complete and its
digest checked; If-None-Match and If-Match are applied by the store (or by the
only instance, where the store does not).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if wantsHelpAll(cmd, helpAll) {
				return nil
			}
			if len(args) == 1 {
				if cfg.store != "" {
					return usageErr(errors.New("give a folder or --store ($LARGO_STORE), not both"))
				}
				cfg.dir = args[0]
			}
			return runServe(cmd.Context(), e, cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.store, "store", "", "where the files are: s3://BUCKET/PREFIX for a bucket, or a folder (default: the DIR argument, else the current folder)")
	f.StringVar(&cfg.s3Endpoint, "s3-endpoint", "", "S3 endpoint URL, http(s)://HOST[:PORT] (default: $AWS_ENDPOINT_URL_S3, else $AWS_ENDPOINT_URL, else Amazon S3)")
	f.StringVar(&cfg.s3Region, "s3-region", "", "S3 region (default: $AWS_REGION, else $AWS_DEFAULT_REGION, else asked of the store)")
	f.BoolVar(&cfg.s3VirtualHost, "s3-virtual-host", false, "address the bucket as BUCKET.HOST instead of HOST/BUCKET (path-style, the default)")
	f.Var(&cfg.s3PartSize, "s3-part-size", "size of the parts of multipart uploads to a bucket, 5MiB to 5GiB; a body of unknown length holds at most this x --s3-part-concurrency in memory")
	f.IntVar(&cfg.s3PartConc, "s3-part-concurrency", s3.DefaultPartConcurrency, "parts of one upload of unknown length in memory at once (the one filling and those being sent), and parts of resumable uploads sent to the bucket at once")
	addSliceFlags(f, &cfg.slices)
	addEngineFlags(f, &cfg.s3Engine)
	f.StringVar(&cfg.listen, "listen", "127.0.0.1:8080", "address to serve on, host:port (port 0 picks a free one)")
	f.StringVar(&cfg.publicURL, "public-url", "", "the base URL clients reach this server at, such as https://files.example/ behind a proxy: recorded in the store's state area for largo share's links (default: the address it listens on)")
	f.StringVar(&cfg.adminListen, "admin-listen", "", "separate address for metrics and pprof, answered to whoever reaches it (default none: no pprof, and metrics at /_largo/metrics only for the users an access-file rule for that path names)")
	durationVar(f, &cfg.idleTimeout, "idle-timeout", 60*time.Second, "cut a client that takes or sends no bytes for this long, and close idle keep-alive connections")
	f.Var(&cfg.minRate, "min-rate", "cut a client that sends or takes fewer than this many bytes per second on average, counted after the first idle timeout (0: no minimum); a body trickled a byte now and then cannot hold its connection")
	f.Var(&cfg.rates.transfer, "rate", "cap each transfer at this many bytes per second, each way, such as 5MB (0: no cap)")
	f.Var(&cfg.rates.user, "rate-per-user", "cap all transfers of one signed-in user together, and of the share links that user made, at this many bytes per second each way, however many connections carry them; a user's rate in the access file replaces it (0: no cap)")
	f.Var(&cfg.rates.address, "rate-per-address", "cap all transfers from one client address together (an IPv6 /64 counts as one) at this many bytes per second each way, however many connections carry them (0: no cap)")
	f.Var(&cfg.rates.link, "rate-per-link", "cap all transfers through one share link together at this many bytes per second each way; a link made with a lower max rate keeps its own (0: no cap of the server's)")
	f.IntVar(&cfg.maxConns, "max-conns", 10000, "most connections held at once; beyond it clients get 503 (0: no limit)")
	f.IntVar(&cfg.maxConnsPerIP, "max-conns-per-ip", defaultMaxConnsPerIP, "most connections held at once from one client address, so that one address cannot take every slot (0: no limit; the connections of a --trusted-proxy are not capped)")
	durationVar(f, &cfg.drainTimeout, "drain-timeout", 30*time.Second, "on SIGINT or SIGTERM, how long transfers in flight may finish before they are cut")
	durationVar(f, &cfg.shutdownTimeout, "shutdown-timeout", 10*time.Second, "on a stop, how long the server's own last work may take once the transfers are over: stopping its background work, adding the usage it counted to the quotas' record, giving up the hooks' outbox")
	f.StringVar(&cfg.tlsCert, "tls-cert", "", "TLS certificate file, PEM (with --tls-key: serve HTTPS and HTTP/2)")
	f.StringVar(&cfg.tlsKey, "tls-key", "", "TLS private key file, PEM")
	f.Var(&cfg.logFormat, "log-format", "log format: text or json")
	f.Var(&cfg.compress, "compress", "compress text files on the fly for clients that accept it: on or off (precompressed sidecars are served either way)")
	f.Var(&cfg.compressLevel, "compress-level", "on-the-fly compression level: fast, default or best")
	f.IntVar(&cfg.compressMax, "compress-streams", encode.DefaultMaxStreams, "most responses compressed on the fly at once; beyond it files are sent uncompressed")
	f.Var(&cfg.listingMemory, "listing-memory", "most memory one folder listing sorts in (each folder of an archive too); a larger folder spills sorted runs to --listing-temp-dir (at least 256KiB)")
	f.Var(&cfg.listingBudget, "listing-budget", "most memory all listings, archives and searches hold together; one client (an address, an IPv6 /64, a user, a share link) holds at most a quarter of it, or --listing-memory if more; beyond either they get 503 with Retry-After (at least --listing-memory)")
	f.StringVar(&cfg.listingTemp, "listing-temp-dir", "", "folder of the sorted runs of large listings, on a disk, not a tmpfs (default: the system's temporary folder)")
	addFileCacheFlags(f, &cfg.fileCache)
	addDigestFlags(f, &cfg.digestRate)
	f.Var(&cfg.sidecars, "sidecars", "which NAME.zst, NAME.br, NAME.gz are sent as NAME's encoding: recorded (those largo precompress wrote, while unchanged) or any (any not older than NAME, as nginx's gzip_static)")
	f.BoolVar(&cfg.upload, "upload", false, "accept writes (PUT, multipart POST, DELETE, tus uploads at /_largo/uploads/), each with the token (with --access, the access file's rules decide writes instead)")
	f.StringVar(&cfg.token, "token", "", "the token writes must carry (default: generated with --upload and printed once)")
	f.BoolVar(&cfg.uploadOpen, "upload-open", false, "accept writes from anyone, without a token (implies --upload; dangerous)")
	f.Var(&cfg.maxUpload, "max-upload", "largest file a write may store, such as 500MB or 10GiB (default 0: no limit)")
	f.Var(&cfg.reserve, "reserve", "free space writes must leave on the disk, such as 1GiB (default 0; a bucket has no free space to check)")
	f.StringVar(&cfg.access.accessFile, "access", "", "access file (TOML): users, their passwords or tokens, and rules of who may read, list, write and delete where; writes are on when a rule grants write or delete (--upload then adds nothing); reloaded on SIGHUP")
	f.StringVar(&cfg.access.tokenFile, "token-file", "", "read the write token from this file (implies --upload), so that it appears in no process listing")
	f.StringVar(&cfg.access.shareKeyFile, "share-key-file", "", "key of share links, 32 bytes or more (default: kept in the store's state folder, made with the first link, shared by every instance serving it)")
	f.StringSliceVar(&cfg.access.corsOrigins, "cors-origin", nil, "origins (https://app.example) whose pages may read and write here from a browser, tus uploads included (default none: only this server's own pages)")
	f.StringSliceVar(&cfg.access.hosts, "host", nil, "host names this server answers besides, on a loopback address, localhost, 127.0.0.1 and ::1 (421 for others)")
	f.StringSliceVar(&cfg.access.trustedProxies, "trusted-proxy", nil, "addresses or networks (10.0.0.1, 10.0.0.0/8, ::1) of proxies in front: from there only, the client's address is read from --forwarded-header, and users from --identity-header; their connections are not capped by --max-conns-per-ip")
	f.Var(&cfg.access.forwarded, "forwarded-header", "the field trusted proxies append the client's address to, read from its right end: X-Forwarded-For or Forwarded")
	f.BoolVar(&cfg.access.proxyProtocol, "proxy-protocol", false, "read a PROXY protocol header (version 1 or 2) at the start of a connection from a trusted proxy, when it sends one: the client's address at accept time, from a TCP proxy (whose clients' own fields are then not believed)")
	f.StringVar(&cfg.access.identityHeader, "identity-header", "", "field in which a trusted proxy names the user it signed in, such as Remote-User: that user of the access file is signed in, without a password (default none; the proxy must set or remove it on every request)")
	f.StringVar(&cfg.access.groupsHeader, "groups-header", "", "field in which a trusted proxy lists the signed-in user's groups, separated by commas or bars, such as Remote-Groups; rules name them group:NAME; until it has named a user's groups, that user is held to every rule that restricts a group (default none)")
	f.BoolVar(&cfg.webdav, "webdav", false, "speak WebDAV at the files' URLs (PROPFIND, PROPPATCH, MKCOL, COPY, MOVE, LOCK, UNLOCK; locks held in the store's state area), to mount the folder or bucket as a drive; changes need --upload")
	f.Var(&cfg.symlinks, "symlinks", "which symbolic links inside the folder are followed: follow (all), within (those that lead into their own folder or below it) or none; a name through a link is judged both as spelled and as it resolves, and never reaches a hidden name (default: within with --access, else follow)")
	f.Var(&cfg.linkMaxUpload, "link-max-upload", "largest file a write through a share link (a drop box) may store, unless the link names a smaller one (0: no cap of the links' own)")
	f.BoolVar(&cfg.noMkdir, "no-mkdir", false, "refuse writes into folders that do not exist (409) instead of creating them")
	addQuotaFlags(f, &cfg.quota, true)
	f.StringVar(&cfg.ietfVersions, "ietf-versions", joinInts(resumable.DefaultVersions()), "interop versions of the IETF resumable-upload draft that make a PUT or POST resumable (Upload-Draft-Interop-Version), comma-separated, or off")
	durationVar(f, &cfg.uploadExpiry, "upload-expiry", resumable.DefaultExpiry, "remove a resumable upload that receives no bytes for this long; on a bucket, also abort the multipart uploads of interrupted writes older than this")
	durationVar(f, &cfg.expirySweep, "expiry-sweep", time.Minute, "how often expired files are removed: those under an access file's [[expire]] paths, and those a drop box with a file TTL received")
	addHookFlags(f, &cfg.hooks)
	addS3APIFlags(f, &cfg.s3api)
	addHelpAll(f, &helpAll)
	documentEnv(f)
	setServeHelp(cmd)
	return cmd
}

// runServe serves until a signal, then stops: the server (newServer)
// is made from the flags, run, and stopped, with every goroutine it
// started ended and its last records written, before this returns.
func runServe(ctx context.Context, e *env, cfg *serveConfig) error {
	// The log (an access line per request) is written off the requests'
	// path, and whatever is queued is written out before this returns.
	logOut := logwriter.New(e.stderr, 0)
	defer logOut.Close()
	logger := newLogger(logOut, cfg.logFormat.value)
	s, err := newServer(ctx, e, cfg, logger, logOut)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}

// loadTLS returns the TLS configuration of --tls-cert and --tls-key, nil
// without them.
func loadTLS(cfg *serveConfig) (*tls.Config, error) {
	if (cfg.tlsCert == "") != (cfg.tlsKey == "") {
		return nil, usageErr(errors.New("--tls-cert and --tls-key go together"))
	}
	if cfg.tlsCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(cfg.tlsCert, cfg.tlsKey)
	if err != nil {
		return nil, usageErr(fmt.Errorf("TLS: %v", err))
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// newMetrics returns the server's metrics.
func newMetrics() *metrics.Metrics {
	outcomes := make([]string, len(transfer.Outcomes))
	for i, o := range transfer.Outcomes {
		outcomes[i] = string(o)
	}
	return metrics.New(outcomes)
}

// sidecarPolicy is which files stand for another as its encoding: those
// largo precompress recorded (in files: nil, none), or with any every
// fresh one.
func sidecarPolicy(files *record.Files, any bool) *sidecar.Policy {
	return sidecar.NewPolicy(sidecar.NewChecker(files), any, serve.ContentType)
}

// encoders returns the encoders of dynamic compression, nil when it is
// off.
func encoders(cfg *serveConfig) (*encode.Encoders, error) {
	if cfg.compress.value != "on" {
		return nil, nil
	}
	level, err := encode.ParseLevel(cfg.compressLevel.value)
	if err == nil && cfg.compressMax < 1 {
		err = errors.New("--compress-streams must be at least 1 (use --compress off to disable compression)")
	}
	if err != nil {
		return nil, usageErr(err)
	}
	enc, err := encode.NewEncoders(encode.Config{Level: level, MaxStreams: cfg.compressMax})
	if err != nil {
		return nil, usageErr(err)
	}
	return enc, nil
}

// limitConns puts the connection caps on the main listener. A trusted
// proxy's connections are not capped per address (see package limit).
func limitConns(ln net.Listener, cfg *serveConfig, trusted []netip.Prefix, logger *slog.Logger, answer503 bool) *limit.Listener {
	return limit.Wrap(ln, limit.Config{
		Max:       cfg.maxConns,
		PerIP:     cfg.maxConnsPerIP,
		Answer503: answer503,
		Refused: func(a net.Addr) {
			logger.Warn("connection refused: too many connections", "client", a.String())
		},
		Linger:        lingerFor(cfg.idleTimeout),
		Trusted:       trusted,
		ProxyHeader:   cfg.access.proxyProtocol,
		HeaderTimeout: headerTimeout(cfg.idleTimeout),
		BadHeader: func(a net.Addr, err error) {
			logger.Warn("connection closed: a trusted proxy sent no valid PROXY protocol header", "proxy", a.String(), "err", err)
		},
	})
}

// httpServer is the main listener's server: header and idle timeouts,
// never a total one (see package transfer).
func httpServer(h http.Handler, cfg *serveConfig, logger *slog.Logger, tlsConf *tls.Config) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: headerTimeout(cfg.idleTimeout),
		IdleTimeout:       cfg.idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		TLSConfig:         tlsConf,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		HTTP2:             http2Config(cfg.idleTimeout),
		ConnContext:       transfer.ConnContext,
	}
}

// announce says where the server serves: a line for people, and the ready
// line for programs (package ready).
func announce(e *env, where string, addr net.Addr, https bool, adminURL, s3URL string) {
	url := listenURL(addr, https)
	fmt.Fprintf(e.stdout, "largo: serving %s at %s\n", where, url)
	ready.Write(e.stdout, ready.Line{URL: url, Addr: addr.String(), Admin: adminURL, S3: s3URL})
}

// listenURL is the base URL of a server listening on addr.
func listenURL(addr net.Addr, https bool) string {
	scheme := "http"
	if https {
		scheme = "https"
	}
	return fmt.Sprintf("%s://%s/", scheme, displayAddr(addr))
}

// publicURL is the base URL recorded for largo share: --public-url,
// checked, or the address the server listens on.
func publicURL(cfg *serveConfig, addr net.Addr, https bool) (string, error) {
	if cfg.publicURL == "" {
		return listenURL(addr, https), nil
	}
	u, err := url.Parse(cfg.publicURL)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", usageErr(fmt.Errorf("--public-url %s: an http or https URL such as https://files.example/", cfg.publicURL))
	}
	return strings.TrimSuffix(u.String(), "/") + "/", nil
}

// adminMux serves metrics and pprof on the admin listener.
func adminMux(metrics http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	mux.Handle("GET /_largo/metrics", metrics)
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", redactedCmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// redactedCmdline answers pprof's cmdline with the values of the flags
// that carry secrets replaced: the admin listener is for operators, but a
// secret has no reason to leave the process.
func redactedCmdline(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, strings.Join(redactArgs(os.Args), "\x00"))
}

// redactArgs returns args with the value of --token (given as
// --token=VALUE or --token VALUE) replaced.
func redactArgs(args []string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		switch {
		case strings.HasPrefix(a, "--token="):
			out[i] = "--token=REDACTED"
		case a == "--token" && i+1 < len(out):
			out[i+1] = "REDACTED"
		}
	}
	return out
}

// textAccessLog is where serve writes its access lines by hand: w in the
// text format, whose bytes they match; nil (through the Logger) for JSON.
func textAccessLog(w io.Writer, format string) io.Writer {
	if format == "json" {
		return nil
	}
	return w
}

func newLogger(w io.Writer, format string) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// displayAddr is the address to print: an unspecified host (all
// interfaces) is shown as localhost, which works from this machine.
func displayAddr(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok || !ta.IP.IsUnspecified() {
		return a.String()
	}
	return net.JoinHostPort("localhost", fmt.Sprint(ta.Port))
}
