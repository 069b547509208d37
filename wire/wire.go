// Package wire is HTTP's vocabulary as largo speaks it, in one small
// place: the one table that turns an error into a status and a one-line
// reason for every protocol (Status, Refuse), and the fields largo reads
// and writes: the conditions of a write (If-None-Match, If-Match,
// If-Unmodified-Since), digests (RFC 9530's Content-Digest and
// Repr-Digest), the structured-field Items of the resumable-upload draft
// (RFC 9651), WebDAV's If header (RFC 4918), and what a browser says of
// where a request comes from (Origin, Sec-Fetch-Site: SameOrigin). It
// parses and formats, and refuses what is malformed or cross-site; it
// stores nothing: the write pipeline (package ingest) and the stores know
// nothing of HTTP, and the front ends (serve, pageapi, resumable, dav)
// and the client speak through this package.
//
// It imports only the root package and the standard library. Its
// functions keep no state and are safe for concurrent use.
package wire
