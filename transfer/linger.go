package transfer

import (
	"context"
	"net"

	"largo/internal/netconn"
)

// An answer given before its request's body was read closes the
// connection, and the client may still be sending that body. A socket
// closed with bytes left unread, or one that bytes reach after it is
// closed, answers with a reset, and a reset makes the client's kernel
// throw away what it has received and not yet read: the 413 or 507 the
// client was sent is lost, and it sees "connection reset" instead of the
// reason. So such a connection lingers: its connection is asked, through
// the request's context, to shut its sending side when it closes and to
// read and discard what still comes for a short, bounded time, until the
// client, having read the answer, closes its side.

// lingerer is a connection that can linger when it closes (package
// limit's connections can).
type lingerer interface {
	// Linger asks the connection to linger when it is closed.
	Linger()
}

// connKey is the context key of the request's connection.
type connKey struct{}

// ConnContext is an http.Server's ConnContext: it keeps the connection
// in the context of its requests, so that a Response that gives a body up
// can ask it to linger.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// ConnOf returns the request connection that ConnContext kept in ctx, or
// nil.
func ConnOf(ctx context.Context) net.Conn {
	if ctx == nil {
		return nil
	}
	c, _ := ctx.Value(connKey{}).(net.Conn)
	return c
}

// linger asks the connection of ctx to linger when it closes, unwrapping
// a TLS connection to the one beneath.
func linger(ctx context.Context) {
	if l, ok := netconn.Find[lingerer](ConnOf(ctx)); ok {
		l.Linger()
	}
}
