package ingest

import "context"

type linkKey struct{}

// ThroughLink returns ctx marked as the context of a write made through
// a share link (a drop box): the requester has no account, only the
// link. A resumable upload made so is resumed by its ID alone.
func ThroughLink(ctx context.Context) context.Context {
	return context.WithValue(ctx, linkKey{}, true)
}

// IsThroughLink reports whether ctx is that of a write made through a
// share link (see ThroughLink).
func IsThroughLink(ctx context.Context) bool {
	v, _ := ctx.Value(linkKey{}).(bool)
	return v
}
