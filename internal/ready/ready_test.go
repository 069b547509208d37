package ready

import (
	"bytes"
	"testing"
)

func TestWriteParse(t *testing.T) {
	want := Line{URL: "http://127.0.0.1:4711/", Addr: "127.0.0.1:4711", Admin: "http://127.0.0.1:4712/"}
	var b bytes.Buffer
	if err := Write(&b, want); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if out != `{"msg":"largo ready","url":"http://127.0.0.1:4711/","addr":"127.0.0.1:4711","admin":"http://127.0.0.1:4712/"}`+"\n" {
		t.Errorf("Write wrote %q", out)
	}
	got, ok := Parse(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	want.Msg = Msg
	if !ok || got != want {
		t.Errorf("Parse(%q) = %+v, %v; want %+v", out, got, ok, want)
	}
}

func TestParseOthers(t *testing.T) {
	for _, line := range []string{
		"",
		"largo: serving . at http://127.0.0.1:4711/",
		`{"msg":"ready","url":"http://127.0.0.1:4711/","addr":"127.0.0.1:4711"}`,
		`{"msg":"largo ready","addr":"127.0.0.1:4711"}`,
		`{"msg":"largo ready","url":"http://127.0.0.1:4711/"}`,
		`{"msg":"largo ready","url":"http://127.0.0.1:4711/","addr":`,
		`{"time":"2026-01-01T00:00:00Z","level":"INFO","msg":"request","status":200}`,
	} {
		if l, ok := Parse([]byte(line)); ok {
			t.Errorf("Parse(%q) = %+v, true; want false", line, l)
		}
	}
}
