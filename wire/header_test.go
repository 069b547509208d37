package wire

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// TestUploadComplete: both generations of the field, and values that
// say nothing.
func TestUploadComplete(t *testing.T) {
	for _, c := range []struct {
		hdr                  []string
		complete, stated, in bool
	}{
		{nil, false, false, false},
		{[]string{"Upload-Complete", "?1"}, true, true, false},
		{[]string{"Upload-Complete", "?0"}, false, true, true},
		{[]string{"Upload-Complete", "yes"}, false, false, false},
		{[]string{"Upload-Incomplete", "?1"}, false, true, true},
		{[]string{"Upload-Incomplete", "?0"}, true, true, false},
		{[]string{"Upload-Complete", "?1", "Upload-Incomplete", "?1"}, true, true, false},
		{[]string{"Upload-Complete", "?1", "Upload-Complete", "?0"}, false, false, false},
	} {
		h := http.Header{}
		for i := 0; i < len(c.hdr); i += 2 {
			h.Add(c.hdr[i], c.hdr[i+1])
		}
		complete, stated := UploadComplete(h)
		if complete != c.complete || stated != c.stated || Incomplete(h) != c.in {
			t.Errorf("%v: %v, %v, incomplete %v", c.hdr, complete, stated, Incomplete(h))
		}
	}
}

func TestLockTokens(t *testing.T) {
	for _, tc := range []struct {
		ifs  string
		want string
	}{
		{"", ""},
		{"(<opaquelocktoken:a>)", "opaquelocktoken:a"},
		{`<http://h/x> (<urn:a> ["e<t"]) (Not <DAV:no-lock>)`, "urn:a"},
		{"(<a>) (<b>)", "a,b"},
		{"(not <a>)(<b>)", "b"},
		{"(<unterminated", ""},
		{`(["etag"])`, ""},
	} {
		h := http.Header{}
		if tc.ifs != "" {
			h.Set("If", tc.ifs)
		}
		if got := strings.Join(LockTokens(h), ","); got != tc.want {
			t.Errorf("LockTokens(%q) = %q; want %q", tc.ifs, got, tc.want)
		}
	}
}

func FuzzLockTokens(f *testing.F) {
	f.Add(`<http://h/x> (<urn:a> ["e<t"]) (Not <DAV:no-lock>)`)
	f.Fuzz(func(t *testing.T, s string) {
		h := http.Header{"If": {s}}
		for _, tok := range LockTokens(h) {
			if tok == "" || strings.ContainsAny(tok, "<>") {
				t.Errorf("LockTokens(%q) gave %q", s, tok)
			}
		}
	})
}

func TestCheckIf(t *testing.T) {
	for _, tc := range []struct {
		v  string
		ok bool
	}{
		{"(<opaquelocktoken:a-b/_x>)", true},
		{"(<urn:uuid:1>) (Not <DAV:no-lock>)", true},
		{`(["etag"])`, true},
		{`(<opaquelocktoken:a> ["W/\"x\""])`, true},
		{"<http://host/a.txt> (<opaquelocktoken:a>)", true},
		{"</a.txt> (<opaquelocktoken:a>) </b.txt> (Not <opaquelocktoken:b>) ([\"e\"])", true},
		{"  (  <t>  )  ", true},
		{"garbage", false},
		{"(", false},
		{"(<nolock>", false},
		{"()", false},
		{"(<>)", false},
		{"(Not)", false},
		{"(x)", false},
		{"<http://host/a.txt>", false},
		{"<http://host/a.txt> <http://host/b.txt> (<t>)", false},
		{"(<t>) <http://host/a.txt> (<t>)", false},
		{"(<t>))", false},
		{"(<a<b>)", false},
		{"([etag)", false},
	} {
		h := http.Header{"If": {tc.v}}
		if err := CheckIf(h); (err == nil) != tc.ok {
			t.Errorf("CheckIf(%q) = %v; want ok %v", tc.v, err, tc.ok)
		}
	}
	if err := CheckIf(http.Header{}); err != nil {
		t.Errorf("no If header: %v", err)
	}
}

func FuzzCheckIf(f *testing.F) {
	for _, s := range []string{"(<opaquelocktoken:a>)", "<http://h/a> (Not <t>) ([\"e\"])", "(", "garbage"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{"If": {v}}
		if CheckIf(h) == nil && len(LockTokens(h)) == 0 && !strings.Contains(v, "[") && !strings.Contains(strings.ToLower(v), "not") {
			t.Errorf("CheckIf(%q) accepts a header without a token, an entity tag or a Not", v)
		}
	})
}

// TestLevel: who caused a failure decides its level: the client's doing
// is not logged beyond its access line, a full disk or a shed load is a
// warning, the server's own failure an error.
func TestLevel(t *testing.T) {
	for _, c := range []struct {
		code  int
		level slog.Level
		ok    bool
	}{
		{400, 0, false}, {403, 0, false}, {412, 0, false}, {499, 0, false},
		{501, slog.LevelInfo, true},
		{507, slog.LevelWarn, true}, {503, slog.LevelWarn, true},
		{500, slog.LevelError, true}, {502, slog.LevelError, true},
	} {
		if level, ok := Level(c.code); level != c.level || ok != c.ok {
			t.Errorf("Level(%d) = %v, %v; want %v, %v", c.code, level, ok, c.level, c.ok)
		}
	}
}
