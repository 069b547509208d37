package largo

import "net/netip"

// ClientName returns the name under which the limits shared by client
// (bandwidth caps, the listings' memory, failed sign-ins) count the
// client at address a: an IPv4 address as it is, an IPv6 address as its
// /64. A host is usually handed a whole /64, so counting its addresses
// one by one would give it 2^64 clients. An IPv4 address mapped into
// IPv6 is the IPv4 address.
func ClientName(a netip.Addr) string {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.WithZone("").Prefix(64)
		return p.String()
	}
	return a.String()
}

// ClientOf returns ClientName of the address in remote, a request's
// remote address ("host:port", or an address alone); remote itself when
// it holds no address.
func ClientOf(remote string) string {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ClientName(ap.Addr())
	}
	if a, err := netip.ParseAddr(remote); err == nil {
		return ClientName(a)
	}
	return remote
}
