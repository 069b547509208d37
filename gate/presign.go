package gate

import (
	"context"
	"fmt"
	"time"

	"largo"
)

var _ largo.Presigner = (*Store)(nil)

// Presign implements largo.Presigner: reading needs read, and the URL is
// the inner store's, of the decision's physical name. A store that hands
// out no URLs answers an error wrapping largo.ErrUnsupported.
func (s *Store) Presign(ctx context.Context, name string, ttl time.Duration) (string, error) {
	p, ok := s.inner.(largo.Presigner)
	if !ok {
		return "", fmt.Errorf("%s: presigned URLs: %w", name, largo.ErrUnsupported)
	}
	var u string
	err := s.g.act(ctx, OpRead, name, false, func(d *Decision) (err error) {
		u, err = p.Presign(ctx, d.Physical, ttl)
		return err
	})
	return u, err
}

// Redirected reports whether ctx's principal downloads name from a
// presigned URL of the store rather than through the server: whether
// the access rules that decide what a user (or the anonymous visitor)
// may do there say so (auth.Policy.Redirected). The holder of a share
// link never is, since a link's download counts and caps hold only
// through the server; nor is the server.
func (g *Gate) Redirected(ctx context.Context, name string) bool {
	p, ok := From(ctx)
	if !ok || p.kind == link || p.kind == server {
		return false
	}
	return g.cfg.Access.Policy().Redirected(p.name, name)
}
