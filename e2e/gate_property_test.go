//go:build e2e

package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"largo"
	"largo/auth"
)

// TestGateProperty drives the real binary with random access files
// (users, rules, share links and drop boxes) and random requests over
// every protocol (downloads, listings, archives, sidecars; PUT, forms,
// tus, IETF uploads; DELETE; the WebDAV methods; the page's moves,
// selections, searches and SHA256SUMS), on a folder with
// symbolic links and on a bucket. The store itself records every effect:
// after each request the stored files are compared with those before,
// and every file created, changed or removed must be allowed, for the
// request's principal, by the decision as the access file states it,
// judged where the file really is; a refused request must leave no
// effect at all; and no answer may carry the bytes of a file the
// principal may not read. Every file's bytes are a secret of their own,
// so a leak cannot hide in a copy, a move or an archive.
//
// The seed of each run is logged; LARGO_PROPERTY_SEED replays one.
func TestGateProperty(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5, 6}
	if s := os.Getenv("LARGO_PROPERTY_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("LARGO_PROPERTY_SEED=%q: %v", s, err)
		}
		seeds = []uint64{n}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			forEachTarget(t, func(t *testing.T, g *target) {
				requests := 250
				if g.srv != nil {
					requests = 120
				}
				runProperty(t, g, seed, requests)
			})
		})
	}
}

// propUsers are the users of the random access files, with their tokens.
var propUsers = map[string]string{"u1": "u1-token-0123456789", "u2": "u2-token-0123456789"}

// prop is one run: the world as the test knows it, and the server.
type prop struct {
	t      *testing.T
	g      *target
	s      *server
	rng    *rand.Rand
	pol    *auth.Policy
	ps     []*principal
	n      int      // a counter for new names and secrets
	folder []string // folders to aim requests at
	names  []string // names to aim requests at, existing or not
	// what the run exercised
	effects, refused, links int
}

// principal is who sends a request: anonymous, a user, or the holder of
// a link (whose requests go to the link's URL).
type principal struct {
	name string
	user string // the user's name; "" anonymous
	link *propLink
}

type propLink struct {
	id, base, kind, path, maker string
}

func (p *principal) String() string { return p.name }

func runProperty(t *testing.T, g *target, seed uint64, requests int) {
	t.Logf("seed %d on a %s", seed, g.kind)
	w := &prop{t: t, g: g, rng: rand.New(rand.NewPCG(seed, 0x1a260))}
	w.seedTree()
	file := writeAccessFile(t, w.accessFile())
	var err error
	if w.pol, err = auth.LoadFile(file); err != nil {
		t.Fatal(err)
	}
	args := []string{"--access", file, "--webdav", "--sidecars", []string{"any", "recorded"}[seed%2]}
	if g.srv == nil {
		w.s = startServer(t, g.dir, args...)
	} else {
		w.s = startS3Largo(t, g.srv, "", args...)
	}
	w.ps = []*principal{{name: "anonymous"}, {name: "u1", user: "u1"}, {name: "u2", user: "u2"}}
	w.makeLinks()
	for i := 0; i < requests && !t.Failed(); i++ {
		w.step(i)
	}
	t.Logf("%d requests: %d with effects, %d refused, %d through links", requests, w.effects, w.refused, w.links)
	if w.effects == 0 || w.refused == 0 || w.links == 0 {
		t.Errorf("the run exercised too little to judge: %d with effects, %d refused, %d through links", w.effects, w.refused, w.links)
	}
}

// seedTree writes the files every run starts from, each holding a secret
// of its own, and on a folder the symbolic links.
func (w *prop) seedTree() {
	for _, name := range []string{"top.txt", "a/f1.txt", "a/f1.txt.gz", "a/b/f2.txt", "a/b/NOTES", "a/b/NOTES.gz", "c/f3.txt", "c/deep/f4.txt", "d/f5.txt", "e/f6.txt"} {
		w.g.seed(w.t, name, w.secret())
	}
	w.folder = []string{"", "a", "a/b", "c", "c/deep", "d", "e", "new"}
	w.names = []string{"top.txt", "a/f1.txt", "a/f1.txt.gz", "a/b/f2.txt", "a/b/NOTES", "a/b/NOTES.gz", "c/f3.txt", "c/deep/f4.txt", "d/f5.txt", "e/f6.txt", "a/b/f2.txt.gz", "c/f3.txt.br", "d/new.txt"}
	if w.g.srv != nil {
		return
	}
	for link, to := range map[string]string{"a/toc": "../c", "a/st": "../.largo", "c/b2": "../a/b", "a/b/here": "f2.txt", "e/up": ".."} {
		if err := os.Symlink(to, filepath.Join(w.g.dir, filepath.FromSlash(link))); err != nil {
			w.t.Fatal(err)
		}
	}
	w.folder = append(w.folder, "a/toc", "c/b2", "e/up", "e/up/a")
	w.names = append(w.names, "a/toc/f3.txt", "a/st/share.key", "c/b2/f2.txt", "c/b2/NOTES.gz", "a/b/here", "e/up/c/f3.txt", "a/toc/deep/f4.txt")
}

// secret returns new bytes no other file holds.
func (w *prop) secret() string {
	w.n++
	return fmt.Sprintf("SECRET-%04d-%08x", w.n, w.rng.Uint32())
}

var secretRE = regexp.MustCompile(`SECRET-[0-9]{4}-[0-9a-f]{8}`)

// accessFile writes random rules: for some of the paths, for some of the
// requesters, some of the permissions.
func (w *prop) accessFile() string {
	var b strings.Builder
	for _, u := range []string{"u1", "u2"} {
		fmt.Fprintf(&b, "[[user]]\nname = %q\ntokens = [%q]\n\n", u, propUsers[u])
	}
	perms := []string{"read", "list", "write", "delete"}
	for _, p := range []string{"", "a", "a/b", "a/b/NOTES", "a/f1.txt", "c", "c/deep", "d", "e", "new"} {
		for range 1 + w.rng.IntN(2) {
			var users []string
			for _, u := range []string{"*", "anonymous", "u1", "u2"} {
				if w.rng.IntN(2) == 0 {
					users = append(users, fmt.Sprintf("%q", u))
				}
			}
			if len(users) == 0 {
				continue
			}
			var allow []string
			for _, pm := range perms {
				if w.rng.IntN(5) < 3 {
					allow = append(allow, fmt.Sprintf("%q", pm))
				}
			}
			fmt.Fprintf(&b, "[[rule]]\npath = %q\nusers = [%s]\nallow = [%s]\n\n", "/"+p, strings.Join(users, ", "), strings.Join(allow, ", "))
		}
	}
	return b.String()
}

// makeLinks asks each user for a few links, of each kind, on the page's
// route (the refused ones are refused), and makes one with largo share.
func (w *prop) makeLinks() {
	for _, u := range []string{"u1", "u2"} {
		for range 3 {
			f := url.Values{"path": {"/" + w.pick(append(w.folder, w.names...))}, "expires": {"1h"}}
			if w.rng.IntN(3) == 0 {
				f.Set("write", "1")
			}
			body := f.Encode()
			resp, text := send(w.t, "POST", w.s.URL+"_largo/share", strings.NewReader(body), int64(len(body)), "Authorization", "Bearer "+propUsers[u], "Content-Type", "application/x-www-form-urlencoded")
			if resp.StatusCode != 201 {
				continue
			}
			var info struct{ ID, URL, Kind, Path string }
			if err := json.Unmarshal([]byte(text), &info); err != nil {
				w.t.Fatal(err)
			}
			l := &propLink{id: info.ID, base: strings.TrimSuffix(w.s.URL, "/") + info.URL, kind: info.Kind, path: strings.TrimPrefix(info.Path, "/"), maker: u}
			w.ps = append(w.ps, &principal{name: "link(" + u + "," + info.Kind + ",/" + l.path + ")", link: l})
		}
	}
	for _, drop := range []bool{false, true} {
		args := []string{"--expires", "1h"}
		p, kind := "/a", "folder"
		if drop {
			args, p, kind = append(args, "--write"), "/d", "drop"
		}
		l := &propLink{base: shareLink(w.t, w.g, w.s, p, args...), kind: kind, path: strings.TrimPrefix(p, "/")}
		w.ps = append(w.ps, &principal{name: "link(operator," + kind + "," + p + ")", link: l})
	}
}

func (w *prop) pick(from []string) string { return from[w.rng.IntN(len(from))] }

// newName returns a name no file has yet, in one of the folders, now
// and then of a sidecar's form.
func (w *prop) newName() string {
	w.n++
	name := largo.Join(w.pick(w.folder), fmt.Sprintf("n%d.txt", w.n))
	if w.rng.IntN(4) == 0 {
		name = w.pick(w.names) + ".gz"
	}
	w.names = append(w.names, name)
	return name
}

// target returns the URL that names name for p: through its link for a
// link holder (a name outside the link goes to the link anyway, where it
// must be refused), else at its own path.
func (w *prop) target(p *principal, name string, dir bool) string {
	esc := (&url.URL{Path: name}).EscapedPath()
	if dir && name != "" {
		esc += "/"
	}
	if p.link == nil {
		return w.s.URL + esc
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(name, p.link.path), "/")
	if p.link.kind == "file" {
		return p.link.base
	}
	esc = (&url.URL{Path: rel}).EscapedPath()
	if dir && rel != "" {
		esc += "/"
	}
	return p.link.base + esc
}

func (p *principal) auth() []string {
	if p.user == "" {
		return nil
	}
	return []string{"Authorization", "Bearer " + propUsers[p.user]}
}

// step sends one random request as a random principal and checks what it
// did.
func (w *prop) step(i int) {
	p := w.ps[w.rng.IntN(len(w.ps))]
	k := w.rng.IntN(21)
	if k >= 17 && p.link != nil {
		p = w.ps[0] // the page's routes are no link's: its holder is anonymous there
	}
	before := w.snapshot()
	var desc string
	var resp *http.Response
	var body string
	owner := p // whose rights an effect is judged by
	hdr := p.auth()
	switch k {
	case 0, 1:
		name := w.pick(w.names)
		desc = "GET " + name
		resp, body = send(w.t, "GET", w.target(p, name, false), nil, 0, append(hdr, "Accept-Encoding", w.pick([]string{"", "gzip", "br, zstd"}))...)
	case 2:
		dir := w.pick(w.folder)
		desc = "GET " + dir + "/ (JSON)"
		resp, body = send(w.t, "GET", w.target(p, dir, true), nil, 0, append(hdr, "Accept", "application/json")...)
	case 3:
		dir := w.pick(w.folder)
		desc = "GET " + dir + "/?archive=tar"
		resp, body = send(w.t, "GET", w.target(p, dir, true)+"?archive=tar", nil, 0, hdr...)
	case 4, 5:
		name := w.pick(append(w.names, w.newName()))
		desc = "PUT " + name
		data := w.secret()
		resp, body = send(w.t, "PUT", w.target(p, name, false), strings.NewReader(data), int64(len(data)), hdr...)
	case 6:
		dir := w.pick(w.folder)
		desc = "POST form to " + dir
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		fw, _ := mw.CreateFormFile("file", path.Base(w.newName()))
		fw.Write([]byte(w.secret()))
		mw.Close()
		resp, body = send(w.t, "POST", w.target(p, dir, true), &b, int64(b.Len()), append(hdr, "Content-Type", mw.FormDataContentType())...)
	case 7:
		name := w.pick(w.names)
		desc = "DELETE " + name
		resp, body = send(w.t, "DELETE", w.target(p, name, false), nil, 0, hdr...)
	case 8:
		dir := w.pick(w.folder[1:])
		desc = "DELETE " + dir + "/?recursive=1"
		resp, body = send(w.t, "DELETE", w.target(p, dir, true)+"?recursive=1", nil, 0, hdr...)
	case 9:
		dir := w.pick(w.folder)
		desc = "PROPFIND " + dir
		resp, body = send(w.t, "PROPFIND", w.target(p, dir, true), nil, 0, append(hdr, "Depth", "1")...)
	case 10, 11:
		method := []string{"COPY", "MOVE"}[k-10]
		from, to := w.pick(append(w.names, w.folder[1:]...)), w.pick(append(w.names, w.newName()))
		desc = method + " " + from + " -> " + to
		resp, body = send(w.t, method, w.target(p, from, false), nil, 0, append(hdr, "Destination", w.target(p, to, false), "Overwrite", w.pick([]string{"T", "F"}))...)
	case 12:
		dir := largo.Join(w.pick(w.folder), fmt.Sprintf("m%d", i))
		desc = "MKCOL " + dir
		resp, body = send(w.t, "MKCOL", w.target(p, dir, false), nil, 0, hdr...)
		w.folder = append(w.folder, dir)
	case 13:
		name := w.pick(w.names)
		desc = "PROPPATCH " + name
		x := `<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:x"><D:set><D:prop><Z:note>` + w.secret() + `</Z:note></D:prop></D:set></D:propertyupdate>`
		resp, body = send(w.t, "PROPPATCH", w.target(p, name, false), strings.NewReader(x), int64(len(x)), hdr...)
	case 14:
		resp, body, desc, owner = w.tus(p)
	case 15, 16:
		resp, body, desc, owner = w.ietf(p, k == 16)
	case 17:
		from, to := w.pick(append(w.names, w.folder[1:]...)), w.pick(append(w.names, w.newName()))
		desc = "page move " + from + " -> " + to
		f := url.Values{"from": {"/" + from}, "to": {"/" + to}}.Encode()
		resp, body = send(w.t, "POST", w.s.URL+"_largo/move", strings.NewReader(f), int64(len(f)), append(hdr, "Content-Type", "application/x-www-form-urlencoded")...)
	case 18:
		dir := w.pick(w.folder)
		q := url.Values{"dir": {"/" + dir}, "format": {"tar"}}
		for range 1 + w.rng.IntN(3) {
			q.Add("name", path.Base(w.pick(append(w.names, w.folder[1:]...))))
		}
		desc = "page archive " + q.Encode()
		resp, body = send(w.t, "GET", w.s.URL+"_largo/archive?"+q.Encode(), nil, 0, hdr...)
	case 19:
		dir := w.pick(w.folder)
		desc = "GET " + dir + "/SHA256SUMS"
		resp, body = send(w.t, "GET", w.target(p, dir, true)+"SHA256SUMS", nil, 0, hdr...)
		w.namesMay(i, p, desc, resp, dir, sumsNames(body), auth.Read)
	case 20:
		dir := w.pick(w.folder)
		q := url.Values{"path": {"/" + dir}, "q": {w.pick([]string{"f", ".txt", "NOTES", "n"})}}
		desc = "page search " + q.Encode()
		resp, body = send(w.t, "GET", w.s.URL+"_largo/search?"+q.Encode(), nil, 0, hdr...)
		w.namesMay(i, p, desc, resp, dir, searchNames(body), auth.List)
	}
	after := w.snapshot()
	w.check(i, p, owner, desc, resp, body, before, after)
}

// namesMay checks the names an answer shows below dir: each must be one
// p may perm (List: in the folder that holds it). Names that go through
// a symbolic link are left to the other checks, as their rights are
// where the link leads.
func (w *prop) namesMay(i int, p *principal, desc string, resp *http.Response, dir string, names []string, perm auth.Perm) {
	if resp.StatusCode != 200 {
		return
	}
	for _, n := range names {
		full := largo.Join(dir, n)
		if throughLink(full) {
			continue
		}
		on := full
		if perm == auth.List {
			on = parentOf(full)
		}
		if !w.may(p, perm, on) {
			w.t.Errorf("request %d, %s as %s: the answer names %s, which %s may not see", i, desc, p.name, full, p.name)
		}
	}
}

// throughLink reports whether name goes through one of the symbolic
// links seedTree makes.
func throughLink(name string) bool {
	for _, l := range []string{"a/toc", "a/st", "c/b2", "a/b/here", "e/up"} {
		if largo.Within(l, name) {
			return true
		}
	}
	return false
}

// sumsNames returns the names a SHA256SUMS file lists.
func sumsNames(body string) []string {
	var names []string
	for _, line := range strings.Split(body, "\n") {
		if _, name, ok := strings.Cut(line, "  "); ok && !strings.HasPrefix(line, "#") {
			names = append(names, name)
		}
	}
	return names
}

// searchNames returns the names a search's answer found.
func searchNames(body string) []string {
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		var m struct{ Name string }
		if json.Unmarshal([]byte(line), &m) == nil && m.Name != "" {
			names = append(names, m.Name)
		}
	}
	return names
}

// tus creates an upload as p and finishes it as another random principal
// now and then: the upload must be placed under its creator's rights,
// and only its creator (or anyone, for a drop box's) may go on with it.
func (w *prop) tus(p *principal) (*http.Response, string, string, *principal) {
	if p.link != nil {
		p = w.ps[0] // tus is not spoken through a link: its holder is anonymous there
	}
	name := w.pick(append(w.names, w.newName()))
	data := w.secret()
	b64 := base64.StdEncoding.EncodeToString
	meta := "filename " + b64([]byte(path.Base(name))) + ",folder " + b64([]byte(path.Dir("/"+name)))
	resp, body := send(w.t, "POST", w.s.URL+"_largo/uploads/", nil, 0, append(p.auth(), "Tus-Resumable", "1.0.0", "Upload-Length", strconv.Itoa(len(data)), "Upload-Metadata", meta)...)
	desc := "tus " + name + " by " + p.name
	if resp.StatusCode != 201 {
		return resp, body, desc, p
	}
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, "http") {
		loc = strings.TrimSuffix(w.s.URL, "/") + loc
	}
	sender := p
	if w.rng.IntN(3) == 0 {
		if sender = w.ps[w.rng.IntN(len(w.ps))]; sender.link != nil {
			sender = w.ps[0]
		}
	}
	desc += ", finished by " + sender.name
	resp, body = send(w.t, "PATCH", loc, strings.NewReader(data), int64(len(data)), append(sender.auth(), "Tus-Resumable", "1.0.0", "Upload-Offset", "0", "Content-Type", "application/offset+octet-stream")...)
	if sender != p && p.link == nil && resp.StatusCode < 300 {
		w.t.Errorf("%s: another principal went on with the upload: %d", desc, resp.StatusCode)
	}
	return resp, body, desc, p
}

// ietf sends a PUT of the IETF resumable-upload protocol as p: whole, or
// in two parts, the second now and then sent by another principal.
func (w *prop) ietf(p *principal, parts bool) (*http.Response, string, string, *principal) {
	name := w.pick(append(w.names, w.newName()))
	data := w.secret()
	desc := "IETF PUT " + name + " by " + p.name
	v := []string{"Upload-Draft-Interop-Version", "6"}
	if !parts {
		resp, body := send(w.t, "PUT", w.target(p, name, false), strings.NewReader(data), int64(len(data)), append(append(p.auth(), v...), "Upload-Complete", "?1")...)
		return resp, body, desc, p
	}
	half := len(data) / 2
	resp, body := send(w.t, "PUT", w.target(p, name, false), strings.NewReader(data[:half]), int64(half), append(append(p.auth(), v...), "Upload-Complete", "?0")...)
	if resp.StatusCode >= 300 {
		return resp, body, desc, p
	}
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, "http") {
		loc = strings.TrimSuffix(w.s.URL, "/") + loc
	}
	sender := p
	if w.rng.IntN(3) == 0 {
		sender = w.ps[w.rng.IntN(len(w.ps))]
	}
	desc += ", finished by " + sender.name
	resp, body = send(w.t, "PATCH", loc, strings.NewReader(data[half:]), int64(len(data)-half), append(append(sender.auth(), v...), "Upload-Complete", "?1", "Upload-Offset", strconv.Itoa(half), "Content-Type", "application/partial-upload")...)
	if sender != p && p.link == nil && resp.StatusCode < 300 {
		w.t.Errorf("%s: another principal went on with the upload: %d", desc, resp.StatusCode)
	}
	return resp, body, desc, p
}

// entry is a stored file as the snapshot sees it.
type entry struct {
	sum    [32]byte
	secret string // the secret its bytes hold, if any
}

// snapshot reads every stored file (not following links, and leaving
// hidden names out: the state area and the S3 server's own).
func (w *prop) snapshot() map[string]entry {
	out := map[string]entry{}
	filepath.WalkDir(w.g.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(w.g.dir, p)
		rel = filepath.ToSlash(rel)
		if rel != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		out[rel] = entry{sum: sha256.Sum256(b), secret: secretRE.FindString(string(b))}
		return nil
	})
	return out
}

// check judges one request's effects and answer.
func (w *prop) check(i int, p, owner *principal, desc string, resp *http.Response, body string, before, after map[string]entry) {
	t := w.t
	where := fmt.Sprintf("request %d, %s as %s: %d", i, desc, p.name, resp.StatusCode)
	var created, changed, removed []string
	for name, e := range after {
		old, ok := before[name]
		switch {
		case !ok:
			created = append(created, name)
		case old.sum != e.sum:
			changed = append(changed, name)
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			removed = append(removed, name)
		}
	}
	sort.Strings(created)
	sort.Strings(changed)
	sort.Strings(removed)
	effects := len(created) + len(changed) + len(removed)
	if effects > 0 {
		w.effects++
	}
	if resp.StatusCode >= 400 {
		w.refused++
	}
	if p.link != nil {
		w.links++
	}
	if resp.StatusCode >= 400 && effects > 0 {
		t.Errorf("%s: refused, yet created %v, changed %v, removed %v", where, created, changed, removed)
	}
	holders := map[string][]string{} // secret -> where it was before
	for name, e := range before {
		if e.secret != "" {
			holders[e.secret] = append(holders[e.secret], name)
		}
	}
	for _, name := range append(created, changed...) {
		if !w.may(owner, auth.Write, name) {
			t.Errorf("%s: wrote %s, which %s may not write", where, name, owner.name)
		}
		if owner.link != nil && owner.link.kind == "drop" && (slicesContain(changed, name) || parentOf(name) != owner.link.path) {
			t.Errorf("%s: a drop box changed %s", where, name)
		}
		if from := holders[after[name].secret]; len(from) > 0 && !w.mayAny(owner, auth.Read, from) {
			t.Errorf("%s: copied the bytes of %v, which %s may not read, to %s", where, from, owner.name, name)
		}
	}
	for _, name := range removed {
		if !w.may(owner, auth.Delete, name) {
			t.Errorf("%s: removed %s, which %s may not delete", where, name, owner.name)
		}
	}
	for _, s := range secretRE.FindAllString(body+strings.Join(resp.Header.Values("Location"), " "), -1) {
		if from := holders[s]; len(from) > 0 && !w.mayAny(p, auth.Read, from) {
			t.Errorf("%s: the answer holds the bytes of %v, which %s may not read", where, from, p.name)
		}
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func parentOf(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return ""
}

// mayAny reports whether p may do perm on one of names.
func (w *prop) mayAny(p *principal, perm auth.Perm, names []string) bool {
	for _, n := range names {
		if w.may(p, perm, n) {
			return true
		}
	}
	return false
}

// may is the decision as the access file states it, for the principals
// of this test, on a name where a file really is: the rules for a user
// (or anonymous); for a link holder, the link's scope and its maker's
// rules; a sidecar's name needs the same on its file's.
func (w *prop) may(p *principal, perm auth.Perm, name string) bool {
	if largo.Reserved(name) {
		return false
	}
	if base, _, ok := largo.SidecarBase(name); ok && perm&(auth.Read|auth.Write) != 0 && !w.may(p, perm&(auth.Read|auth.Write), base) {
		return false
	}
	if p.link == nil {
		return w.pol.Allowed(p.user, name)&perm == perm
	}
	l := p.link
	var scope auth.Perm
	switch l.kind {
	case "folder":
		if l.path == "" || name == l.path || strings.HasPrefix(name, l.path+"/") {
			scope = auth.Read | auth.List
		}
	case "file":
		if b, _, ok := largo.SidecarBase(name); name == l.path || ok && b == l.path {
			scope = auth.Read
		}
	case "drop":
		if parentOf(name) == l.path && name != l.path {
			scope = auth.Write
		}
	}
	if scope&perm != perm {
		return false
	}
	return l.maker == "" || w.pol.Allowed(l.maker, name)&perm == perm
}
