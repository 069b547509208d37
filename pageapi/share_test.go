package pageapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestNewShare: a signed-in user makes links to what they may do, and
// nothing else; the links work.
func TestNewShare(t *testing.T) {
	f := newAccessFixture(t)
	for _, tt := range []struct {
		user, form string
		code       int
	}{
		{"", "path=/pub&expires=1h", 401},
		{"bob", "path=/private&expires=1h", 403},
		{"bob", "path=/pub&expires=1h&write=1", 403},
		{"bob", "path=/pub&expires=1h", 403},   // a link to /pub would reach /pub/sealed
		{"alice", "path=/pub&expires=1h", 201}, // no rule below hides anything from alice
		{"bob", "path=/inbox&expires=1h&write=1", 201},
		{"alice", "path=/private&expires=1h", 201},
		{"alice", "path=/private/s.txt&expires=1h", 201},
		{"alice", "path=/private/s.txt&expires=1h&password=short", 400},
		{"alice", "path=/private&expires=999999h", 400},
		{"alice", "path=/private&expires=7d", 201}, // days and weeks, as everywhere
		{"alice", "path=/private&expires=2w", 201},
		{"alice", "path=/private&expires=91d", 400},
		{"alice", "path=/private&expires=-1d", 400},
		{"alice", "path=/private/s.txt&expires=1h&write=1", 400},
		{"alice", "path=/nope&expires=1h", 404},
	} {
		rec := f.post(SharePath, tt.user, tt.form)
		if rec.Code != tt.code {
			t.Errorf("%s as %q: %d %s; want %d", tt.form, tt.user, rec.Code, strings.TrimSpace(rec.Body.String()), tt.code)
			continue
		}
		if rec.Code == 201 && !strings.Contains(tt.form, "write") {
			var out struct{ URL string }
			json.Unmarshal(rec.Body.Bytes(), &out)
			if got := f.get(out.URL, ""); got.Code != 200 {
				t.Errorf("the link of %s: %d", tt.form, got.Code)
			}
		}
	}
}

// TestShareForm: the page offers the share form to who may share the
// folder, and its script is served.
func TestShareForm(t *testing.T) {
	f := newAccessFixture(t)
	p := f.get("/private/", "alice").Body.String()
	if !strings.Contains(p, `id="share-form"`) || !strings.Contains(p, `action="/_largo/share"`) {
		t.Error("no share form for alice in her folder")
	}
	_, app, _ := strings.Cut(p, `<script type="module" src="`)
	app, _, _ = strings.Cut(app, `"`)
	if p := f.get("/pub/", "").Body.String(); strings.Contains(p, `id="share-form"`) {
		t.Error("a share form for an anonymous visitor")
	}
	if rec := f.get(strings.Replace(app, "app.js", "share.js", 1), ""); rec.Code != 200 || !strings.Contains(rec.Body.String(), "shareForm") {
		t.Errorf("share.js: %d", rec.Code)
	}
}

// TestShareMaxRate: the share form's max_rate is kept with the link.
func TestShareMaxRate(t *testing.T) {
	f := newFixture(t, map[string]string{"f": "x"}, setup{policy: accessFile})
	rec := f.post(SharePath, "alice", "path=/f&expires=1h&max_rate=5MB")
	var info LinkInfo
	if err := json.Unmarshal(rec.Body.Bytes(), &info); rec.Code != 201 || err != nil || info.MaxRate != 5e6 {
		t.Fatalf("max_rate=5MB: %d %s", rec.Code, rec.Body)
	}
	if l, err := f.gate.Links().Get(context.Background(), info.ID); err != nil || l.MaxRate != 5e6 {
		t.Errorf("the record's MaxRate: %v, %v", l, err)
	}
	for _, bad := range []string{"fast", "0", "-1MB"} {
		if rec := f.post(SharePath, "alice", "path=/f&expires=1h&max_rate="+bad); rec.Code != 400 || !strings.Contains(rec.Body.String(), "max_rate") {
			t.Errorf("max_rate=%s: %d %s; want 400 naming max_rate", bad, rec.Code, rec.Body)
		}
	}
}
