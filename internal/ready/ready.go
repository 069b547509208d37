// Package ready is the line a largo server writes on its standard output
// once it accepts connections, for a program that starts it (the end-to-end
// tests, the lab, a script or a supervisor) to learn when and where it
// listens without reading a sentence meant for people.
//
// The line is one JSON object, alone on its line, whose "msg" is "largo
// ready":
//
//	{"msg":"largo ready","url":"http://127.0.0.1:8080/","addr":"127.0.0.1:8080"}
//
// "url" is the base URL to give a client, "addr" the address listened on
// (host:port, as the listener reports it), and "admin", when there is an
// admin listener, that listener's base URL, and "s3", when there is an
// S3 API listener, its base URL. Fields may be added; none will
// change meaning. The package keeps no state; its functions are safe for
// concurrent use.
package ready

import (
	"bytes"
	"encoding/json"
	"io"
)

// Msg is the "msg" of the ready line.
const Msg = "largo ready"

// Line is the ready line's content.
type Line struct {
	// Msg is always Msg; Write sets it.
	Msg string `json:"msg"`
	// URL is the server's base URL, with a trailing slash.
	URL string `json:"url"`
	// Addr is the address the server listens on, host:port.
	Addr string `json:"addr"`
	// Admin is the admin listener's base URL, if there is one.
	Admin string `json:"admin,omitempty"`
	// S3 is the base URL of the S3 API's listener, if there is one.
	S3 string `json:"s3,omitempty"`
}

// Write writes l as the ready line to w.
func Write(w io.Writer, l Line) error {
	l.Msg = Msg
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Parse reports whether text, one line of a server's output without its
// newline, is the ready line, and returns its content. Any other line,
// JSON or not, is not.
func Parse(text []byte) (Line, bool) {
	var l Line
	text = bytes.TrimSpace(text)
	if len(text) == 0 || text[0] != '{' || json.Unmarshal(text, &l) != nil || l.Msg != Msg || l.URL == "" || l.Addr == "" {
		return Line{}, false
	}
	return l, true
}
