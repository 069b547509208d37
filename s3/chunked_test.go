package s3

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestChunkedBody checks the aws-chunked framing of a streamed body: the
// length announced, and the bytes, read in pieces of any size.
func TestChunkedBody(t *testing.T) {
	for _, tt := range []struct {
		payload string
		want    string
	}{
		{"a", "1\r\na\r\n0\r\nx-amz-checksum-crc32:6Le+Qw==\r\n\r\n"},
		{"hello world", "b\r\nhello world\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n"},
	} {
		b := newChunkedBody(iotest.OneByteReader(strings.NewReader(tt.payload)), int64(len(tt.payload)))
		got, err := io.ReadAll(b)
		if err != nil || string(got) != tt.want {
			t.Errorf("%q: %q, %v; want %q", tt.payload, got, err, tt.want)
		}
		if n := newChunkedBody(nil, int64(len(tt.payload))).encodedLen(); n != int64(len(tt.want)) {
			t.Errorf("%q: encodedLen %d; want %d", tt.payload, n, len(tt.want))
		}
	}
	big := bytes.Repeat([]byte("x"), 1<<20+3)
	b := newChunkedBody(bytes.NewReader(big), int64(len(big)))
	n, err := io.Copy(io.Discard, b)
	if err != nil || n != b.encodedLen() {
		t.Errorf("1 MiB: %d bytes, %v; want %d", n, err, b.encodedLen())
	}
	// A payload that ends early is an error, never a shorter body.
	b = newChunkedBody(strings.NewReader("abc"), 4)
	if _, err := io.ReadAll(b); err != io.ErrUnexpectedEOF {
		t.Errorf("short payload: %v; want io.ErrUnexpectedEOF", err)
	}
}
