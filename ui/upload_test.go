package ui

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestUploadPage: a drop box's page says what it takes and nothing of
// where its folder is, offers a form and a files-only uploader of its own
// scope, escapes what it lists, and carries nothing the policy blocks; a
// user's page names the folder and says a name taken is replaced.
func TestUploadPage(t *testing.T) {
	u := New("/_largo/ui/")
	render := func(p UploadPage) string {
		t.Helper()
		p.Nonce = "n0nce"
		var b bytes.Buffer
		if err := u.UploadPage(&b, p); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	drop := render(UploadPage{
		Heading: "Send files", Link: true, CreateOnly: true, Blind: true, SentKey: "link L1",
		MaxSize: 1 << 30, FileTTL: 7 * 24 * time.Hour, Expires: time.Date(2025, 3, 20, 14, 0, 0, 0, time.UTC),
		Upload:   &Upload{Endpoint: "/_largo/s/TOKEN/_largo/uploads/", Scope: "link L1", FilesOnly: true, CreateOnly: true},
		Received: []Received{{Name: "<b>x</b>.txt", Size: 1536, SHA256: "abc"}},
	})
	for _, want := range []string{
		`<h1>Send files</h1>`,
		`<li>Each file may be up to 1 GiB.</li>`,
		`<li>A name already taken here is refused: rename your file and send it again.</li>`,
		`<li>Each file you send is removed 7 days after it arrives.</li>`,
		`<li>This link works until 2025-03-20 14:00 UTC.</li>`,
		`nothing else of the folder`,
		`<meta name="robots" content="noindex">`,
		`<form id="send-form" class="send-form" method="post" action="./" enctype="multipart/form-data">`,
		`data-endpoint="/_largo/s/TOKEN/_largo/uploads/" data-scope="link L1" data-files-only="" data-create-only=""`,
		`data-folder="" data-sent="link L1"`,
		`<span class="sent-name">&lt;b&gt;x&lt;/b&gt;.txt</span> <span class="sent-size">1.5 KiB</span>`,
		`Drop files anywhere on this page`,
		"/_largo/ui/" + u.Version() + "/send.js",
	} {
		if !strings.Contains(drop, want) {
			t.Errorf("the drop box's page lacks %s", want)
		}
	}
	for _, absent := range []string{`id="choose-folder"`, `webkitdirectory`, "<b>x", `id="files"`, "Open the folder", "Sign in"} {
		if strings.Contains(drop, absent) {
			t.Errorf("the drop box's page has %s", absent)
		}
	}
	checkPolicy(t, drop)

	user := render(UploadPage{Heading: "Upload to /inbox/", Folder: "inbox", Blind: true, User: "bob", May: []string{"write"}, SentKey: "user bob /inbox", Upload: &Upload{Endpoint: "/_largo/uploads/"}})
	for _, want := range []string{`<h1>Upload to /inbox/</h1>`, `A file with the name of one already here replaces it.`, `id="choose-folder"`, `data-folder="inbox"`, `Signed in as <strong>bob</strong><span class="may"> · here you may write</span>`} {
		if !strings.Contains(user, want) {
			t.Errorf("the user's page lacks %s", want)
		}
	}
	if strings.Contains(user, "noindex") || strings.Contains(user, "data-scope") || strings.Contains(user, "This link") {
		t.Error("the user's page reads like a link's")
	}
	if seen := render(UploadPage{Heading: "Upload to /pub/", Folder: "pub"}); !strings.Contains(seen, `<a href="./">Open the folder</a>`) || strings.Contains(seen, "nothing else of the folder") {
		t.Error("a page of a folder its visitor may see does not lead to it")
	}
	if err := u.UploadPage(&bytes.Buffer{}, UploadPage{}); err == nil {
		t.Error("an upload page without a nonce")
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		7 * 24 * time.Hour: "7 days",
		24 * time.Hour:     "1 day",
		36 * time.Hour:     "36 hours",
		90 * time.Minute:   "90 minutes",
		90 * time.Second:   "1m30s",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%s) = %q; want %q", d, got, want)
		}
	}
}
