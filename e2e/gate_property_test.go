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
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"largo"
)

// TestGateProperty drives the real binary with random access files
// (users, rules, share links and drop boxes) and random requests over
// every protocol (downloads, listings, archives, sidecars; PUT, forms,
// tus, IETF uploads; DELETE; the WebDAV methods; the page's moves,
// selections, searches and SHA256SUMS; the S3 API's reads, listings,
// writes, removals, copies and multipart uploads), on a folder with a random graph
// of symbolic links (chains, links to links, ".." inside targets, links
// into the state area, out of the folder, round in loops) and on a
// bucket. The store itself records every effect: after each request the
// stored files, folders and links are compared with those before, and
// every one created, changed or removed must be allowed, for the
// request's principal, by a model of the rules written here, apart from
// the server's own code, judged where the entry physically is (links
// resolved the way the kernel resolves them); a refused request must
// leave no effect at all; no answer may carry the bytes of a file the
// principal may not read, nor the share key; and the state area must
// keep its own. Every file's bytes are a secret of their own, so a leak
// cannot hide in a copy, a move or an archive. Requests are aimed so that
// about half have an effect; a run where fewer than a quarter did (an
// access file that grants little) judged too little, and fails.
//
// The seeds are new each run and logged; LARGO_PROPERTY_SEED replays one,
// and LARGO_PROPERTY_VERBOSE=1 logs the access file and every refusal.
func TestGateProperty(t *testing.T) {
	seeds := []uint64{rand.Uint64(), rand.Uint64(), rand.Uint64()}
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
				requests := 240
				if g.srv != nil {
					requests = 180
				}
				runProperty(t, g, seed, requests)
				if t.Failed() {
					t.Logf("replay with LARGO_PROPERTY_SEED=%d", seed)
				}
			})
		})
	}
}

// propUsers are the users of the random access files, with their tokens.
var propUsers = map[string]string{"u1": "u1-token-0123456789", "u2": "u2-token-0123456789"}

// prop is one run: the world as the test knows it, and the server.
type prop struct {
	t        *testing.T
	g        *target
	s        *server
	rng      *rand.Rand
	rules    []propRule // the access file, as the model reads it
	key      []byte     // the share key, which no answer may hold
	ps       []*principal
	n        int      // a counter for new names and secrets
	folder   []string // folders to aim requests at
	names    []string // names to aim requests at, existing or not
	symlinks []string // the symbolic links made
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
	if os.Getenv("LARGO_PROPERTY_VERBOSE") != "" {
		b, _ := os.ReadFile(file)
		t.Logf("access file:\n%s", b)
		for _, l := range w.symlinks {
			to, _ := os.Readlink(filepath.Join(g.dir, filepath.FromSlash(l)))
			t.Logf("link %s -> %s", l, to)
		}
	}
	args := []string{"--access", file, "--webdav", "--sidecars", []string{"any", "recorded"}[seed%2], "--s3-listen", "127.0.0.1:0"}
	if g.srv == nil {
		args = append(args, "--symlinks", []string{"follow", "within"}[seed/2%2])
		w.s = startServer(t, g.dir, args...)
	} else {
		w.s = startS3Largo(t, g.srv, "", args...)
	}
	w.ps = []*principal{{name: "anonymous"}, {name: "u1", user: "u1"}, {name: "u2", user: "u2"}}
	w.makeLinks()
	var err error
	if w.key, err = os.ReadFile(filepath.Join(g.dir, ".largo", "share.key")); err != nil || len(w.key) < 16 {
		t.Fatalf("the share key: %v", err)
	}
	w.sweep()
	for i := 0; i < requests && !t.Failed(); i++ {
		w.step(i)
	}
	t.Logf("%d requests: %d with effects, %d refused, %d through links", requests, w.effects, w.refused, w.links)
	if w.effects*4 < requests || w.refused == 0 || w.links == 0 {
		t.Errorf("the run exercised too little to judge: %d of %d with effects (a quarter wanted), %d refused, %d through links", w.effects, requests, w.refused, w.links)
	}
}

// seedTree writes the files every run starts from, each holding a secret
// of its own, and on a folder a random graph of symbolic links.
func (w *prop) seedTree() {
	for _, name := range []string{"top.txt", "a/f1.txt", "a/f1.txt.gz", "a/b/f2.txt", "a/b/NOTES", "a/b/NOTES.gz", "c/f3.txt", "c/deep/f4.txt", "d/f5.txt", "e/f6.txt"} {
		w.g.seed(w.t, name, w.secret())
	}
	w.folder = []string{"", "a", "a/b", "c", "c/deep", "d", "e", "new"}
	w.names = []string{"top.txt", "a/f1.txt", "a/f1.txt.gz", "a/b/f2.txt", "a/b/NOTES", "a/b/NOTES.gz", "c/f3.txt", "c/deep/f4.txt", "d/f5.txt", "e/f6.txt", "a/b/f2.txt.gz", "c/f3.txt.br", "d/new.txt"}
	if w.g.srv != nil {
		return
	}
	// The links of a known attack first, in the folder everyone may
	// read: each spelled to stay in its folder, while its ".." steps
	// back from where d led. Then random ones.
	w.link("new/d", "../c/deep")
	w.link("new/x", "d/../f3.txt")
	w.link("new/dd", "d/..")
	w.link("c/kk", "../.largo/share.key")
	w.link("new/key", "d/../kk")
	w.link("a/toc", "../c")
	w.link("c/up", "../a/toc/..")
	for range 10 + w.rng.IntN(6) {
		at := w.pick(w.folder[:7])
		w.link(largo.Join(at, fmt.Sprintf("l%d", len(w.symlinks))), w.randomTarget(at))
	}
	children := []string{"f1.txt", "f2.txt", "f3.txt", "NOTES", "NOTES.gz", "top.txt", "share.key", "deep/f4.txt", "b/f2.txt", "n.txt"}
	for _, l := range w.symlinks {
		w.names = append(w.names, l, largo.Join(l, w.pick(children)), largo.Join(l, w.pick(children)))
		w.folder = append(w.folder, l)
	}
}

// link makes the symbolic link name, leading to target.
func (w *prop) link(name, target string) {
	p := filepath.Join(w.g.dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		w.t.Fatal(err)
	}
	w.symlinks = append(w.symlinks, name)
}

// randomTarget returns a link target for a link in the folder at: to a
// file or folder, to another link (a chain), through a link and back
// with "..", into the state area, up and out, nowhere, or round.
func (w *prop) randomTarget(at string) string {
	up := strings.Repeat("../", len(elements(at)))
	pickOf := func(from []string) string { return w.pick(from) }
	switch w.rng.IntN(9) {
	case 0, 1:
		return up + pickOf(append(w.names[:10], w.folder[1:7]...))
	case 2, 3:
		return up + pickOf(w.symlinks)
	case 4, 5:
		return up + pickOf(w.symlinks) + "/../" + pickOf([]string{"top.txt", "f1.txt", "f3.txt", "b", "deep", "c", "a", ".largo/share.key", "share.key"})
	case 6:
		return pickOf([]string{up + ".largo", up + ".largo/share.key", up + "a/../.largo"})
	case 7:
		return pickOf([]string{".", "..", up + "..", up + "../etc", "/etc", "/"})
	}
	return pickOf([]string{"nowhere/f", "nowhere/../" + up + "top.txt", "self", up + "l0"})
}

// elements returns the elements of a name, none for the root.
func elements(name string) []string {
	if name == "" {
		return nil
	}
	return strings.Split(name, "/")
}

// secret returns new bytes no other file holds.
func (w *prop) secret() string {
	w.n++
	return fmt.Sprintf("SECRET-%04d-%08x", w.n, w.rng.Uint32())
}

var secretRE = regexp.MustCompile(`SECRET-[0-9]{4}-[0-9a-f]{8}`)

// propRule is a rule of the access file, as the model reads it.
type propRule struct {
	path  string
	users []string
	allow perm
}

// perm is a set of permissions, the model's own.
type perm uint8

const (
	pRead perm = 1 << iota
	pList
	pWrite
	pDelete
)

// accessFile writes random rules: for some of the paths, for some of the
// requesters, some of the permissions.
func (w *prop) accessFile() string {
	var b strings.Builder
	for _, u := range []string{"u1", "u2"} {
		k := propS3Keys[u]
		fmt.Fprintf(&b, "[[user]]\nname = %q\ntokens = [%q]\ns3_keys = [{ id = %q, secret = %q }]\n\n", u, propUsers[u], k.id, k.secret)
	}
	perms := []string{"read", "list", "write", "delete"}
	// One folder where everyone may do everything: every run has writes
	// that pass, and links everyone may try.
	w.rules = append(w.rules, propRule{path: "new", users: []string{"*"}, allow: pRead | pList | pWrite | pDelete})
	b.WriteString("[[rule]]\npath = \"/new\"\nusers = [\"*\"]\nallow = [\"all\"]\n\n")
	for _, p := range []string{"", "a", "a/b", "a/b/NOTES", "a/f1.txt", "c", "c/deep", "d", "e"} {
		for range 1 + w.rng.IntN(2) {
			var users, quoted []string
			for _, u := range []string{"*", "anonymous", "u1", "u2"} {
				if w.rng.IntN(2) == 0 {
					users = append(users, u)
					quoted = append(quoted, fmt.Sprintf("%q", u))
				}
			}
			if len(users) == 0 {
				continue
			}
			r := propRule{path: p, users: users}
			var allow []string
			for i, pm := range perms {
				if w.rng.IntN(5) < 3 {
					allow = append(allow, fmt.Sprintf("%q", pm))
					r.allow |= 1 << i
				}
			}
			w.rules = append(w.rules, r)
			fmt.Fprintf(&b, "[[rule]]\npath = %q\nusers = [%s]\nallow = [%s]\n\n", "/"+p, strings.Join(quoted, ", "), strings.Join(allow, ", "))
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

// pickFor picks one of from, most of the time among those the model
// lets p do perm on (as spelled): the run must have requests that the
// gate lets through, not only refusals.
func (w *prop) pickFor(p *principal, perm perm, from []string) string {
	if w.rng.IntN(8) != 0 {
		// Allowed as spelled and where it leads; mostly with no link on
		// the way, which the links' mode may refuse.
		direct := w.rng.IntN(6) != 0
		var ok []string
		for _, n := range from {
			phys, found := w.physical(n, perm&(pWrite|pDelete) == 0)
			if !found || !w.may(p, perm, n) || !w.may(p, perm, phys) || direct && phys != n {
				continue
			}
			_, err := os.Lstat(filepath.Join(w.g.dir, filepath.FromSlash(phys)))
			switch {
			case perm&(pRead|pDelete) != 0 && err != nil:
				continue // nothing there to read or remove
			case perm == pWrite && p.link != nil && p.link.kind == "drop" && err == nil:
				continue // a drop box only creates
			}
			ok = append(ok, n)
		}
		if len(ok) > 0 {
			return w.pick(ok)
		}
	}
	return w.pick(from)
}

// writer returns a principal who may do what the request kind k needs
// on one of the names it aims at, or p when none may.
func (w *prop) writer(p *principal, k int) *principal {
	pm := pWrite
	switch k {
	case 7, 8, s3Delete:
		pm = pDelete
	case 17:
		pm = pRead | pDelete
	}
	var ok []*principal
	for _, q := range w.ps {
		if q.link != nil && (k >= 14 && k != 15 && k != 16) || k == 17 && q.user == "" {
			continue // no link on the page's routes, nor for tus; no page move without a user
		}
		if slices.ContainsFunc(append(w.names, w.folder...), func(n string) bool { return w.may(q, pm, n) || w.may(q, pm, joinName(n, "x")) }) {
			ok = append(ok, q)
		}
	}
	if len(ok) == 0 {
		return p
	}
	return ok[w.rng.IntN(len(ok))]
}

// newName returns a name no file has yet, in one of the folders, now
// and then of a sidecar's form.
func (w *prop) newName() string {
	return w.newNameFor(nil)
}

// newNameFor is newName, in a drop box's folder for its holder p.
func (w *prop) newNameFor(p *principal) string {
	w.n++
	dir := w.pick(w.folder)
	if p != nil && p.link != nil && p.link.kind == "drop" && w.rng.IntN(4) != 0 {
		dir = p.link.path
	}
	name := largo.Join(dir, fmt.Sprintf("n%d.txt", w.n))
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

// sweep reads, as each user and anonymously, every name through a
// symbolic link and every folder (its listing and its archive), before
// the random requests: a link that leads where it may not be followed
// is found whatever the requests choose. It is not counted among them.
func (w *prop) sweep() {
	if w.g.srv != nil {
		return
	}
	counts := [3]int{w.effects, w.refused, w.links}
	var names []string
	for _, n := range w.names {
		if slices.ContainsFunc(w.symlinks, func(l string) bool { return within(l, n) }) {
			names = append(names, n)
		}
	}
	for _, p := range w.ps[:3] {
		for _, n := range names {
			before := w.snapshot()
			resp, body := send(w.t, "GET", w.target(p, n, false), nil, 0, p.auth()...)
			w.check(-1, p, p, "GET "+n, resp, body, before, w.snapshot())
		}
		for _, dir := range w.folder {
			for _, q := range []string{"?archive=tar", ""} {
				before := w.snapshot()
				resp, body := send(w.t, "GET", w.target(p, dir, true)+q, nil, 0, append(p.auth(), "Accept", "application/json")...)
				w.check(-1, p, p, "GET "+dir+"/"+q, resp, body, before, w.snapshot())
			}
		}
	}
	w.effects, w.refused, w.links = counts[0], counts[1], counts[2]
}

// step sends one random request as a random principal and checks what it
// did.
func (w *prop) step(i int) {
	p := w.ps[w.rng.IntN(len(w.ps))]
	k := w.rng.IntN(s3KindsAfter)
	if w.rng.IntN(4) < 3 {
		// A write, more often than not, mostly by a principal who may
		// write somewhere: the run must change things to judge them.
		writes := []int{4, 5, 6, 7, 8, 10, 11, 12, 14, 15, 16, 17, s3Put, s3Delete, s3Copy, s3Multipart}
		k = writes[w.rng.IntN(len(writes))]
		if w.rng.IntN(8) != 0 {
			p = w.writer(p, k)
		}
	}
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
		name := w.pickFor(p, pWrite, append(w.names, w.newNameFor(p)))
		desc = "PUT " + name
		data := w.secret()
		resp, body = send(w.t, "PUT", w.target(p, name, false), strings.NewReader(data), int64(len(data)), hdr...)
	case 6:
		dir := w.pickFor(p, pWrite, w.folder)
		desc = "POST form to " + dir
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		fw, _ := mw.CreateFormFile("file", path.Base(w.newNameFor(p)))
		fw.Write([]byte(w.secret()))
		mw.Close()
		resp, body = send(w.t, "POST", w.target(p, dir, true), &b, int64(b.Len()), append(hdr, "Content-Type", mw.FormDataContentType())...)
	case 7:
		name := w.pickFor(p, pDelete, w.names)
		desc = "DELETE " + name
		resp, body = send(w.t, "DELETE", w.target(p, name, false), nil, 0, hdr...)
	case 8:
		dir := w.pickFor(p, pDelete, w.folder[1:])
		desc = "DELETE " + dir + "/?recursive=1"
		resp, body = send(w.t, "DELETE", w.target(p, dir, true)+"?recursive=1", nil, 0, hdr...)
	case 9:
		dir := w.pick(w.folder)
		desc = "PROPFIND " + dir
		resp, body = send(w.t, "PROPFIND", w.target(p, dir, true), nil, 0, append(hdr, "Depth", "1")...)
	case 10, 11:
		method := []string{"COPY", "MOVE"}[k-10]
		from, to := w.pickFor(p, pRead, append(w.names, w.folder[1:]...)), w.pickFor(p, pWrite, append(w.names, w.newName()))
		desc = method + " " + from + " -> " + to
		resp, body = send(w.t, method, w.target(p, from, false), nil, 0, append(hdr, "Destination", w.target(p, to, false), "Overwrite", w.pick([]string{"T", "F"}))...)
	case 12:
		dir := largo.Join(w.pickFor(p, pWrite, w.folder), fmt.Sprintf("m%d", i))
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
		from, to := w.pickFor(p, pDelete, append(w.names, w.folder[1:]...)), w.pickFor(p, pWrite, append(w.names, w.newName()))
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
		w.namesMay(i, p, desc, resp, dir, sumsNames(body), pRead)
	case 20:
		dir := w.pick(w.folder)
		q := url.Values{"path": {"/" + dir}, "q": {w.pick([]string{"f", ".txt", "NOTES", "n"})}}
		desc = "page search " + q.Encode()
		resp, body = send(w.t, "GET", w.s.URL+"_largo/search?"+q.Encode(), nil, 0, hdr...)
		w.namesMay(i, p, desc, resp, dir, searchNames(body), pList)
	default:
		resp, body, desc = w.s3Step(i, p, k)
	}
	after := w.snapshot()
	w.check(i, p, owner, desc, resp, body, before, after)
}

// namesMay checks the names an answer shows below dir: each must be one
// p may perm (List: in the folder that holds it), where it physically
// is.
func (w *prop) namesMay(i int, p *principal, desc string, resp *http.Response, dir string, names []string, pm perm) {
	if resp.StatusCode != 200 {
		return
	}
	for _, n := range names {
		full := joinName(dir, n)
		on := full
		if pm == pList {
			on = parentOf(full)
		}
		phys, ok := w.physical(on, true)
		if !ok {
			w.t.Errorf("request %d, %s as %s: the answer names %s, which leads nowhere", i, desc, p.name, full)
			continue
		}
		if !w.may(p, pm, phys) || !w.may(p, pm, on) {
			w.t.Errorf("request %d, %s as %s: the answer names %s (%s), which %s may not see", i, desc, p.name, full, phys, p.name)
		}
	}
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
	name := w.pickFor(p, pWrite, append(w.names, w.newName()))
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
	name := w.pickFor(p, pWrite, append(w.names, w.newNameFor(p)))
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
		if sender = w.ps[w.rng.IntN(len(w.ps))]; sender.link != nil {
			sender = w.ps[0] // the upload's own URL is no link's: its holder is anonymous there
		}
	}
	desc += ", finished by " + sender.name
	resp, body = send(w.t, "PATCH", loc, strings.NewReader(data[half:]), int64(len(data)-half), append(append(sender.auth(), v...), "Upload-Complete", "?1", "Upload-Offset", strconv.Itoa(half), "Content-Type", "application/partial-upload")...)
	if sender != p && p.link == nil && resp.StatusCode < 300 {
		w.t.Errorf("%s: another principal went on with the upload: %d", desc, resp.StatusCode)
	}
	return resp, body, desc, p
}

// entry is a stored file, folder or symbolic link as the snapshot sees
// it.
type entry struct {
	kind   byte     // 'f' file, 'd' folder, 'l' link
	sum    [32]byte // a file's bytes, a link's target
	secret string   // the secret a file's bytes hold, if any
}

// snapshot reads every stored file, folder and link (not following
// links, and leaving hidden names out: the state area and the S3
// server's own).
func (w *prop) snapshot() map[string]entry {
	out := map[string]entry{}
	filepath.WalkDir(w.g.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(w.g.dir, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = entry{kind: 'l', sum: sha256.Sum256([]byte(target))}
		case d.IsDir():
			if w.g.srv == nil {
				out[rel] = entry{kind: 'd'} // a bucket's folders are no entries of its own
			}
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			out[rel] = entry{kind: 'f', sum: sha256.Sum256(b), secret: secretRE.FindString(string(b))}
		}
		return nil
	})
	return out
}

// check judges one request's effects and answer.
func (w *prop) check(i int, p, owner *principal, desc string, resp *http.Response, body string, before, after map[string]entry) {
	t := w.t
	where := fmt.Sprintf("request %d, %s as %s: %d", i, desc, p.name, resp.StatusCode)
	var created, changed, removed, folders []string
	for name, e := range after {
		old, ok := before[name]
		switch {
		case !ok && e.kind == 'd':
			folders = append(folders, name)
		case !ok:
			created = append(created, name)
		case old != e:
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
	effects := len(created) + len(changed) + len(removed) + len(folders)
	if effects > 0 {
		w.effects++
		if os.Getenv("LARGO_PROPERTY_VERBOSE") != "" {
			t.Logf("effects: %s: created %v %v, changed %v, removed %v", where, created, folders, changed, removed)
		}
	}
	if resp.StatusCode >= 400 {
		w.refused++
		if os.Getenv("LARGO_PROPERTY_VERBOSE") != "" {
			t.Logf("refused: %s: %s", where, strings.TrimSpace(body))
		}
	}
	if p.link != nil {
		w.links++
	}
	if resp.StatusCode >= 500 {
		t.Errorf("%s: a server error: %q", where, body)
	}
	if resp.StatusCode >= 400 && effects > 0 {
		t.Errorf("%s: refused, yet created %v %v, changed %v, removed %v", where, created, folders, changed, removed)
	}
	holders := map[string][]string{} // secret -> where it was before
	for name, e := range before {
		if e.secret != "" {
			holders[e.secret] = append(holders[e.secret], name)
		}
	}
	for _, name := range append(created, changed...) {
		if !w.may(owner, pWrite, name) {
			t.Errorf("%s: wrote %s, which %s may not write", where, name, owner.name)
		}
		if owner.link != nil && owner.link.kind == "drop" && (slices.Contains(changed, name) || parentOf(name) != owner.link.path) {
			t.Errorf("%s: a drop box changed %s", where, name)
		}
		if from := holders[after[name].secret]; len(from) > 0 && !w.mayAny(owner, pRead, from) {
			t.Errorf("%s: copied the bytes of %v, which %s may not read, to %s", where, from, owner.name, name)
		}
	}
	for _, dir := range folders {
		// A folder is made by MKCOL, a move, or a write below it.
		below := slices.ContainsFunc(created, func(n string) bool { return strings.HasPrefix(n, dir+"/") })
		if !below && !w.may(owner, pWrite, dir) {
			t.Errorf("%s: made the folder %s, where %s may not write", where, dir, owner.name)
		}
	}
	for _, name := range removed {
		if !w.may(owner, pDelete, name) {
			t.Errorf("%s: removed %s, which %s may not delete", where, name, owner.name)
		}
	}
	answer := body + strings.Join(resp.Header.Values("Location"), " ")
	for _, s := range secretRE.FindAllString(answer, -1) {
		if from := holders[s]; len(from) > 0 && !w.mayAny(p, pRead, from) {
			t.Errorf("%s: the answer holds the bytes of %v, which %s may not read", where, from, p.name)
		}
	}
	// The state area is the server's: its key is never read nor replaced,
	// and nothing of a user's lands in it.
	if strings.Contains(answer, string(w.key)) {
		t.Errorf("%s: the answer holds the share key", where)
	}
	if key, err := os.ReadFile(filepath.Join(w.g.dir, ".largo", "share.key")); err != nil || !bytes.Equal(key, w.key) {
		t.Errorf("%s: the share key was changed or removed (%v)", where, err)
	}
	if ents, err := os.ReadDir(filepath.Join(w.g.dir, ".largo")); err == nil {
		for _, e := range ents {
			if !e.IsDir() && (strings.HasPrefix(e.Name(), "n") || strings.HasPrefix(e.Name(), "m") || strings.HasSuffix(e.Name(), ".gz")) && strings.HasSuffix(e.Name(), ".txt") {
				t.Errorf("%s: a user's file %s landed in the state area", where, e.Name())
			}
		}
	}
}

func parentOf(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return ""
}

// joinName joins a folder and a name below it.
func joinName(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// mayAny reports whether p may do pm on one of names.
func (w *prop) mayAny(p *principal, pm perm, names []string) bool {
	for _, n := range names {
		if w.may(p, pm, n) {
			return true
		}
	}
	return false
}

// within reports whether name is dir or below it.
func within(dir, name string) bool {
	return dir == "" || name == dir || strings.HasPrefix(name, dir+"/")
}

// hidden reports whether a name is the server's, never a user's: an
// element with a leading dot, or the reserved prefix.
func hidden(name string) bool {
	for _, e := range elements(name) {
		if strings.HasPrefix(e, ".") {
			return true
		}
	}
	return name == "_largo" || strings.HasPrefix(name, "_largo/")
}

// sidecarOf returns the file a name of a sidecar's form may be the
// encoding of.
func sidecarOf(name string) (string, bool) {
	for _, ext := range []string{".gz", ".br", ".zst"} {
		if b, ok := strings.CutSuffix(name, ext); ok && b != "" && !strings.HasSuffix(b, "/") {
			return b, true
		}
	}
	return "", false
}

// allowed is what the rules give user ("" anonymous) on name: the rule
// with the longest path that covers name and names the user (anonymous
// by that name, anyone by "*"); at one path, a rule naming the user
// beats one for "*", and of two alike the first in the file wins.
func (w *prop) allowed(user, name string) perm {
	if user == "" {
		user = "anonymous"
	}
	best, have := -1, perm(0)
	for _, r := range w.rules {
		if !within(r.path, name) {
			continue
		}
		rank := -1
		for _, u := range r.users {
			switch {
			case u == user:
				rank = 2
			case u == "*" && rank < 0:
				rank = 0
			}
		}
		if rank < 0 {
			continue
		}
		if k := 3*len(r.path) + rank; k > best {
			best, have = k, r.allow
		}
	}
	return have
}

// may is the decision as the access file states it, for the principals
// of this test, on a name where an entry physically is: the rules for a
// user (or anonymous); for a link holder, the link's scope and its
// maker's rules; a sidecar's name needs the same on its file's.
func (w *prop) may(p *principal, pm perm, name string) bool {
	if hidden(name) {
		return false
	}
	if base, ok := sidecarOf(name); ok && pm&(pRead|pWrite) != 0 && !w.may(p, pm&(pRead|pWrite), base) {
		return false
	}
	if p.link == nil {
		return w.allowed(p.user, name)&pm == pm
	}
	l := p.link
	var scope perm
	switch l.kind {
	case "folder":
		if within(l.path, name) {
			scope = pRead | pList
		}
	case "file":
		if b, ok := sidecarOf(name); name == l.path || ok && b == l.path {
			scope = pRead
		}
	case "drop":
		if parentOf(name) == l.path && name != l.path {
			scope = pWrite
		}
	}
	if scope&pm != pm {
		return false
	}
	return l.maker == "" || w.allowed(l.maker, name)&pm == pm
}

// physical returns where name leads on the folder, resolved as the
// kernel resolves it (each link's target in its place, ".." stepping back
// from where a link led); with follow, a link at its end is followed
// too. ok is false for a name that leads out of the folder or round.
func (w *prop) physical(name string, follow bool) (string, bool) {
	if w.g.srv != nil {
		return name, true
	}
	var done []string
	queue := elements(name)
	links := 0
	for len(queue) > 0 {
		e := queue[0]
		queue = queue[1:]
		switch e {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", false
			}
			done = done[:len(done)-1]
			continue
		}
		cur := strings.Join(append(append([]string{}, done...), e), "/")
		fi, err := os.Lstat(filepath.Join(w.g.dir, filepath.FromSlash(cur)))
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 || len(queue) == 0 && !follow {
			done = append(done, e)
			continue
		}
		if links++; links > 40 {
			return "", false
		}
		target, _ := os.Readlink(filepath.Join(w.g.dir, filepath.FromSlash(cur)))
		if strings.HasPrefix(target, "/") {
			return "", false
		}
		queue = append(elements(target), queue...)
	}
	return strings.Join(done, "/"), true
}
