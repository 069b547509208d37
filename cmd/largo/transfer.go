package main

import (
	"context"
	"errors"
	"fmt"
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
	token        string
	tokenFile    string
	// cred is the token and where it came from, found by client.
	cred credential
}

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
	f.DurationVar(&t.stallTimeout, "stall-timeout", 60*time.Second, "give up an attempt (and retry) when no byte moves for this long")
	f.BoolVarP(&t.quiet, "quiet", "q", false, "print nothing but errors")
	f.StringVar(&t.token, tokenFlag, "", "send this bearer token (Authorization: Bearer)")
	f.StringVar(&t.tokenFile, tokenFileFlag, "", "read the bearer token from this file, so that it appears in no process listing")
}

// client makes the client the flags describe.
func (t *transferConfig) client(e *env) (*client.Client, error) {
	if t.retries < 0 {
		return nil, usageErr(errors.New("--retries must be 0 or more"))
	}
	if t.stallTimeout <= 0 {
		return nil, usageErr(errors.New("--stall-timeout must be above 0"))
	}
	cred, err := resolveCredential(t.token, t.tokenFile, e.getenv)
	if err != nil {
		return nil, err
	}
	t.cred = cred
	c := &client.Client{
		Token:        cred.token,
		Retries:      t.retries,
		StallTimeout: t.stallTimeout,
		Progress:     progressFor(e.stderr, t.quiet),
		Logf: func(format string, args ...any) {
			fmt.Fprintf(e.stderr, "largo: "+format+"\n", args...)
		},
	}
	return c, nil
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
		return failed(t.cred.refused(se, err))
	}
	return failed(err)
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
