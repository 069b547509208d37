package main

import (
	"errors"
	"log/slog"
	"strings"

	"largo"
	"largo/auth"
)

// canRedirect refuses an access file whose rules redirect downloads to
// presigned URLs on a store that gives none (a folder).
func canRedirect(p *auth.Policy, st largo.Store) error {
	if len(p.Redirecting()) == 0 {
		return nil
	}
	if _, ok := st.(largo.Presigner); !ok {
		return errors.New(`access file: redirect = "presigned" needs a bucket (--store s3://BUCKET/PREFIX), whose URLs clients are sent to`)
	}
	return nil
}

// logRedirects says which downloads go to presigned URLs, and what then
// no longer holds for them.
func logRedirects(logger *slog.Logger, p *auth.Policy) {
	if r := p.Redirecting(); len(r) > 0 {
		logger.Warn("downloads redirected to presigned URLs of the store: no bandwidth cap, download count or byte count of largo's applies to them", "where", strings.Join(r, "; "))
	}
}
