package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"largo"
	"largo/client"
)

// transferConfig holds the flags get and put share.
type transferConfig struct {
	recursive    bool
	retries      int
	stallTimeout time.Duration
	quiet        bool
	creds        credentialFlags
	cacert       string
	insecure     bool
	// cred is the credential and where it came from, found by client;
	// link is whether the transfer goes through a share link.
	cred credential
	link bool
}

// credentialsHelp is how get and put sign in, and trust a server.
const credentialsHelp = `
Signing in: a token with --token, --token-file or LARGO_TOKEN; or a user of
the access file with --user NAME, the password from --password-file,
LARGO_PASSWORD or a prompt on a terminal. A share link with a password
takes it from --link-password-file, LARGO_LINK_PASSWORD or, on a terminal,
a prompt when the link asks for it. A name and password in the URL
(http://NAME:PASSWORD@host/...) are taken out of it and used the same way.
No secret is printed or kept in a state file: the command printed to
resume gives it as it was given (a token typed with --token is repeated; a
variable or a file is named; a password typed or given in the URL is asked
for again). A refusal says what refused: a token, a password, the access
rules, or the server's own message (a pre-upload hook's, a drop box's).
--cacert FILE trusts a self-signed or private CA's certificate besides the
system's; --insecure checks none.`

// exitCodesHelp is the exit-code table of get and put.
const exitCodesHelp = `
Exit codes: 0 done; 1 failed (the same command fails again: not found,
digest mismatch, disk full; for a missing or refused token, run it again
with the right one); 2 usage; 3 stopped before the end with its state kept
(Ctrl-C, SIGTERM, or the network still failing after --retries): run the
command it prints to resume.`

func (t *transferConfig) flags(f *pflag.FlagSet) {
	f.BoolVarP(&t.recursive, "recursive", "r", false, "transfer a whole folder tree")
	f.IntVar(&t.retries, "retries", 5, "retries in a row after a network error, with exponential backoff (the count restarts whenever bytes move)")
	durationVar(f, &t.stallTimeout, "stall-timeout", 60*time.Second, "give up an attempt (and retry) when no byte moves for this long")
	f.BoolVarP(&t.quiet, "quiet", "q", false, "print nothing but errors")
	f.StringVar(&t.creds.token, tokenFlag, "", "send this bearer token (Authorization: Bearer)")
	f.StringVar(&t.creds.tokenFile, tokenFileFlag, "", "read the bearer token from this file, so that it appears in no process listing")
	f.StringVar(&t.creds.user, userFlag, "", "sign in as this user of the server's access file, with the password from --password-file, $"+passwordEnv+" or a prompt on a terminal")
	f.StringVar(&t.creds.passwordFile, passwordFileFlag, "", "read the password of --user from this file (or set $"+passwordEnv+")")
	f.StringVar(&t.creds.linkPasswordFile, linkPassFileFlag, "", "read a share link's password from this file (or set $"+linkPasswordEnv+"; on a terminal it is asked for when the link wants it)")
	f.StringVar(&t.cacert, "cacert", "", "trust the certificates of this PEM file (a self-signed server's, a private CA's) besides the system's")
	f.BoolVar(&t.insecure, "insecure", false, "do not check the server's TLS certificate at all (anyone on the way can read and change the transfer)")
}

// client makes the client the flags describe, for a transfer to rawURL;
// it returns rawURL without the user name and password it may hold,
// which become the credential and reach no message nor state file.
func (t *transferConfig) client(e *env, rawURL string) (*client.Client, string, error) {
	if t.retries < 0 {
		return nil, "", usageErr(errors.New("--retries must be 0 or more"))
	}
	if t.stallTimeout <= 0 {
		return nil, "", usageErr(errors.New("--stall-timeout must be above 0"))
	}
	rawURL, inURL, err := urlCredentials(rawURL)
	if err != nil {
		return nil, "", err
	}
	cred, err := resolveCredential(t.creds, rawURL, inURL, e)
	if err != nil {
		return nil, "", err
	}
	t.cred, t.link = cred, isShareLink(rawURL)
	tlsConf, err := t.tlsConfig(e)
	if err != nil {
		return nil, "", err
	}
	c := &client.Client{
		TLS:          tlsConf,
		Retries:      t.retries,
		StallTimeout: t.stallTimeout,
		Progress:     progressFor(e.stderr, t.quiet),
		Logf: func(format string, args ...any) {
			fmt.Fprintf(e.stderr, "largo: "+format+"\n", args...)
		},
	}
	cred.apply(c)
	return c, rawURL, nil
}

// tlsConfig is the TLS configuration of --cacert and --insecure; nil for
// the system's trusted roots.
func (t *transferConfig) tlsConfig(e *env) (*tls.Config, error) {
	switch {
	case t.insecure && t.cacert != "":
		return nil, usageErr(errors.New("--cacert and --insecure: give one"))
	case t.insecure:
		fmt.Fprintln(e.stderr, "largo: --insecure: the server's certificate is not checked")
		return &tls.Config{InsecureSkipVerify: true}, nil
	case t.cacert == "":
		return nil, nil
	}
	pem, err := os.ReadFile(t.cacert)
	if err != nil {
		return nil, usageErr(fmt.Errorf("--cacert %s: %v", t.cacert, pathErrText(err)))
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, usageErr(fmt.Errorf("--cacert %s: no PEM certificate in it", t.cacert))
	}
	return &tls.Config{RootCAs: pool}, nil
}

// askLinkPassword asks, on a terminal, for the password of the share
// link a transfer went to, when the link refused it for want of one
// (401); it reports whether the transfer should run again with it.
func (t *transferConfig) askLinkPassword(e *env, c *client.Client, err error) bool {
	var se *client.StatusError
	if !t.link || t.cred.kind == kindLink || !errors.As(err, &se) || se.Code != http.StatusUnauthorized {
		return false
	}
	pw, ok, aerr := askSecret(e, "Password of the share link: ")
	if aerr != nil || !ok || pw == "" {
		return false
	}
	t.cred = credential{kind: kindLink, secret: secret{value: pw, from: "typed at the prompt"}}
	t.cred.apply(c)
	return true
}

// errSignal is the cause of a transfer stopped by SIGINT or SIGTERM.
var errSignal = errors.New("interrupted")

// untilSignal returns a context cancelled, with errSignal as its cause, on
// the first signal; stop releases it.
func untilSignal(ctx context.Context, e *env) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		select {
		case <-e.signals:
			cancel(errSignal)
		case <-done:
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}

// transferErr gives the error of a transfer its exit code and, for a
// resumable stop, the command that resumes it; an answer refusing the
// credential says what to do.
func (t *transferConfig) transferErr(err error, resume string) error {
	var se *client.StatusError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, client.ErrResumable):
		msg := strings.TrimPrefix(err.Error(), client.ErrResumable.Error()+": ")
		if errors.Is(err, errSignal) {
			msg = "interrupted"
		}
		return &exitError{code: exitInterrupted, err: fmt.Errorf("%s; to resume, run again: %s", msg, resume)}
	case errors.As(err, &se) && (se.Code == 401 || se.Code == 403):
		return failed(t.cred.refused(se, err, t.link))
	case untrusted(err):
		return failed(fmt.Errorf("%w: the server's certificate is not trusted here: give the certificate (or its CA's) with --cacert FILE, or skip the check with --insecure", err))
	}
	return failed(err)
}

// untrusted reports whether err is a TLS certificate this machine does
// not trust (self-signed, a private CA's).
func untrusted(err error) bool {
	var ua x509.UnknownAuthorityError
	return errors.As(err, &ua)
}

// summary is the line printed when a transfer ends well.
func summary(verb string, r client.Result, took time.Duration) string {
	if r.UpToDate {
		return fmt.Sprintf("%s: already complete (%s)", r.Path, largo.FormatSize(r.Size))
	}
	s := fmt.Sprintf("%s %s: %s", verb, r.Path, largo.FormatSize(r.Size))
	if r.Moved > 0 && took > 0 {
		s += fmt.Sprintf(", %s moved in %s (%s/s)", largo.FormatSize(r.Moved), took.Round(10*time.Millisecond), largo.FormatSize(int64(float64(r.Moved)/took.Seconds())))
	}
	if r.Resumed {
		s += ", resumed"
	}
	if r.Joined > 0 {
		s += fmt.Sprintf(", joined by the server in %s", r.Joined.Round(time.Millisecond))
	}
	if r.Verified != "" {
		alg, _, _ := strings.Cut(r.Verified, "=")
		s += ", verified against the server's " + alg
	} else if verb == "saved" {
		s += ", not verified: the server sent no digest (its length was checked)"
	}
	return s
}

// treeSummary is the line printed when a folder transfer ends.
func treeSummary(verb string, t client.TreeResult, took time.Duration) string {
	s := fmt.Sprintf("%s %d files (%d already in place, %d failed): %s, %s moved in %s", verb, t.Files, t.UpToDate, t.Failed,
		largo.FormatSize(t.Bytes), largo.FormatSize(t.Moved), took.Round(10*time.Millisecond))
	if t.Files > 0 && strings.HasPrefix(verb, "downloaded") {
		s += fmt.Sprintf("; %d of %d verified against the server's digest", t.Verified, t.Files)
	}
	return s
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
