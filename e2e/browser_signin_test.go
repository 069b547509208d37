//go:build e2e

package e2e

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"largo/auth"
)

// aliceBrowserPassword is the password of alice in aliceAccess; not ASCII, so
// that the challenge's charset is tested too.
const aliceBrowserPassword = "alice's pässword"

// aliceAccess is an access file: everyone reads and lists, alice (who
// signs in with a password) does everything in /inbox. ALICE_HASH stands
// for her password's hash.
const aliceAccess = `
[[user]]
name = "alice"
password = "ALICE_HASH"

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/inbox"
users = ["alice"]
allow = ["all"]
`

var aliceHash = sync.OnceValue(func() string { return auth.HashPassword(aliceBrowserPassword) })

// writeAccessFile writes an access file and returns its path.
func writeAccessFile(t testing.TB, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "access.toml")
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(text, "ALICE_HASH", aliceHash())), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// whoJS is what the page says of its visitor.
const whoJS = `document.querySelector(".who")?.textContent ?? ""`

// TestBrowserSignIn signs in as a user of an access file through the
// browser's own dialog: a wrong password is asked again; the right one
// comes back to the folder, which says who is signed in and what they may
// do there, with the upload area; a file uploads with the credential the
// browser sends by itself (no upload request is ever challenged) and is
// stored; the credential is in no storage a script can read; and where
// the user may not write, the page has no upload area.
func TestBrowserSignIn(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "inbox"), 0o755)
	src := filepath.Join(t.TempDir(), "report.bin")
	want := writeRandom(t, src, 3<<20, 9)
	s := startServer(t, root, "--access", writeAccessFile(t, aliceAccess))
	b := newBrowser(t)

	b.open(s.URL + "inbox/")
	b.waitJS("the page's script", `document.documentElement.classList.contains("js")`, 10*time.Second)
	if got := eval[string](b, `document.querySelector(".who a")?.getAttribute("href") ?? ""`); got != "/?login=%2Finbox%2F" {
		t.Fatalf("sign-in link %q", got)
	}
	if eval[bool](b, `document.getElementById("upload") !== null`) {
		t.Error("an anonymous visitor has an upload area")
	}

	// A wrong password: the browser asks again; cancelling shows the
	// refusal, and nothing is signed in.
	d := b.answerSignIn("alice", "wrong")
	b.do(chromedp.Click(chromedp.CSS(".who a")))
	if !waitFor(15*time.Second, func() bool { return d.challenges() >= 2 }) {
		t.Errorf("asked %d times for a wrong password; want a second time", d.challenges())
	}
	b.waitJS("the refusal", `location.search.startsWith("?login=") && document.readyState === "complete" && !document.getElementById("main")`, 10*time.Second)
	d.stop()
	b.open(s.URL + "inbox/")
	if got := eval[string](b, whoJS); got != "Sign in" {
		t.Errorf("after a refused password the page says %q", got)
	}

	b.signIn("alice", aliceBrowserPassword, "alice")
	if got := eval[string](b, whoJS); got != "Signed in as alice · here you may read, list, write and delete" {
		t.Errorf("the page says %q", got)
	}
	b.waitJS("the upload area", `!document.getElementById("upload").hidden`, 10*time.Second)
	b.do(chromedp.SetUploadFiles(chromedp.ID("pick-files"), []string{src}))
	b.waitJS("the end of the upload", rowJS("report.bin")+`?.dataset.state === "done"`, 30*time.Second)
	if got := fileSHA(t, filepath.Join(root, "inbox", "report.bin")); got != want {
		t.Errorf("stored sha256 %s; want %s", got, want)
	}
	b.waitJS("the refreshed listing", `document.querySelector('#files tr[data-name="report.bin"]') !== null`, 10*time.Second)

	log := s.stderr.String()
	if !regexp.MustCompile(`method=PATCH path=/_largo/uploads/\w+ status=204`).MatchString(log) {
		t.Error("no upload went through")
	}
	if m := regexp.MustCompile(`method=\w+ path=/_largo/uploads/\S* status=401`).FindString(log); m != "" {
		t.Errorf("an upload request went without the credential: %s", m)
	}
	kept := eval[string](b, `JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage), document.cookie])`)
	for _, secret := range []string{aliceBrowserPassword, base64.StdEncoding.EncodeToString([]byte("alice:" + aliceBrowserPassword)), "Basic"} {
		if strings.Contains(kept, secret) {
			t.Errorf("the browser's script-readable storage holds %q: %s", secret, kept)
		}
	}

	// Outside /inbox alice only reads: no upload area.
	b.open(s.URL)
	if got := eval[string](b, whoJS); got != "Signed in as alice · here you may read and list" {
		t.Errorf("at the root the page says %q", got)
	}
	if eval[bool](b, `document.getElementById("upload") !== null`) {
		t.Error("an upload area where alice may not write")
	}
	b.checkPage()
}

// TestBrowserAnonymous: a visitor who has not signed in sees the folder
// and a "Sign in" link, and no upload area; the page's own modules run
// under its policy, and a script slipped into the page for a file users
// uploaded (/evil.js) is refused by the policy and never runs.
func TestBrowserAnonymous(t *testing.T) {
	dir := listingTree(t)
	if err := os.WriteFile(filepath.Join(dir, "evil.js"), []byte("window.pwned = true;"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dir, "--upload", "--token", "the-token-of-this-test")
	b := newBrowser(t)
	b.open(s.URL)
	b.waitJS("the page's modules", `document.documentElement.classList.contains("js")`, 10*time.Second)
	if eval[bool](b, `document.getElementById("upload") !== null || document.getElementById("drop") !== null`) {
		t.Error("an anonymous visitor has an upload area")
	}
	if got := eval[string](b, whoJS); got != "Sign in" {
		t.Errorf("the page says %q; want a sign-in link", got)
	}
	if n := eval[int](b, `document.querySelectorAll("input[type=password], form#token-form").length`); n != 0 {
		t.Error("the page asks for a credential")
	}

	blocked := eval[string](b, `new Promise(resolve => {
		document.addEventListener("securitypolicyviolation", (e) => resolve(e.effectiveDirective + " " + e.blockedURI), { once: true });
		const s = document.createElement("script");
		s.src = "/evil.js";
		document.head.append(s);
	})`)
	if want := "script-src-elem " + s.URL + "evil.js"; blocked != want {
		t.Errorf("violation %q; want %q", blocked, want)
	}
	if eval[bool](b, `window.pwned === true`) {
		t.Error("the uploaded script ran")
	}
	problems := b.takeProblems()
	for _, p := range problems {
		if !strings.Contains(p, "evil.js") {
			t.Errorf("page reported: %s", p)
		}
	}
	if len(problems) == 0 {
		t.Error("the browser reported no refused script")
	}
}
