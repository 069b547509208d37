package serve

import (
	"net/http"
	"net/netip"

	"largo"
	"largo/pace"
	"largo/transfer"
)

// Bandwidth caps (Config.Rates) are put on a request's transfer as soon
// as its principal is known, before it is routed, so that every route
// and protocol is paced alike: downloads, ranges, archives and listings
// as they are sent, and every upload (PUT, form, tus, IETF, WebDAV) as
// its body is read. A transfer waits on the buckets of every key that
// applies to it, and the strictest governs:
//   - its own, with a cap per transfer;
//   - its user's: the signed-in user, or for a share link's holder the
//     user who made the link (a link cannot carry its maker past the
//     maker's own cap), at the rate the access file gives the user, else
//     the default for users;
//   - its share link's, at the lower of the link's own rate and the
//     default for links;
//   - its client address's (an IPv6 /64 counts as one), at the default
//     for addresses.

// pace puts on tw the caps that apply to r, and returns what ends them
// once the request is served.
func (h *Handler) pace(tw *transfer.Response, r *http.Request) (end func()) {
	l := h.cfg.Rates
	if l == nil {
		return func() {}
	}
	var k [3]pace.Key
	keys := h.rateKeys(r, k[:0])
	out := l.Start(pace.Send, keys...)
	var in *pace.Pacer
	if r.Body != nil && r.Body != http.NoBody {
		in = l.Start(pace.Receive, keys...)
	}
	if out == nil && in == nil {
		return func() {}
	}
	tw.Pace(r.Context(), pacer(out), pacer(in))
	return func() {
		out.Close()
		in.Close()
	}
}

// pacer returns p as a transfer.Pacer, nil for a nil p.
func pacer(p *pace.Pacer) transfer.Pacer {
	if p == nil {
		return nil
	}
	return p
}

// rateKeys appends to keys the shared keys of r's transfer (see above).
func (h *Handler) rateKeys(r *http.Request, keys []pace.Key) []pace.Key {
	l := h.cfg.Rates
	p := principal(r)
	user := p.UserName()
	if id := p.LinkID(); id != "" {
		if link := h.gate.LinkOf(r.Context()); link != nil {
			keys = append(keys, pace.Key{Kind: pace.Link, Name: id, Rate: link.Rate(l.Default(pace.Link))})
			user = link.Maker
		}
	}
	if user != "" {
		rate := l.Default(pace.User)
		if own, ok := h.cfg.Access.Policy().Rate(user); ok {
			rate = own
		}
		keys = append(keys, pace.Key{Kind: pace.User, Name: user, Rate: rate})
	}
	if rate := l.Default(pace.Address); rate > 0 {
		if a := clientAddress(r); a.IsValid() {
			keys = append(keys, pace.Key{Kind: pace.Address, Name: largo.ClientName(a), Rate: rate})
		}
	}
	return keys
}

// clientAddress is the address of r's client, as the caps per address
// count it: the connection's peer. Every cap by address asks it here.
func clientAddress(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}
