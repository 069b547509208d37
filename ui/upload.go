package ui

import (
	"errors"
	"io"
	"time"

	"largo"
)

// UploadPage is the page of a folder its visitor may put files in and
// not see: a drop box's, for whoever holds its link, and a folder's
// where a signed-in user may write and not list. It offers the folder
// page's uploader (resumable, parallel for large files, with progress
// and pause) and, without JavaScript, a plain form that posts the files
// to the folder; it says what the folder takes (the largest file, when
// the link stops working, how long files are kept, what happens to a
// name already taken) and lists what this browser sent, which the
// browser keeps (localStorage, under SentKey), and the files a form
// just stored. It shows nothing of the folder's files.
type UploadPage struct {
	// Heading is the page's heading and title.
	Heading string
	// Folder is the store name the uploads' metadata names: "" for a
	// drop box, whose uploads are read within its link's folder.
	Folder string
	// Upload is the uploader; nil offers only the form.
	Upload *Upload
	// SentKey names the list of what this browser sent, in its storage.
	SentKey string
	// MaxSize is the largest file taken, in bytes; zero says nothing.
	MaxSize int64
	// Expires is when the link stops working; zero says nothing.
	Expires time.Time
	// FileTTL is how long each file is kept once it landed; zero keeps
	// them.
	FileTTL time.Duration
	// CreateOnly: a name already taken is refused; else a file with
	// the name of one already there replaces it.
	CreateOnly bool
	// Blind: the visitor sees nothing of the folder (the page says so).
	Blind bool
	// Link: the page is a share link's (search engines are asked not
	// to index it).
	Link bool
	// User, ByToken, May, SignIn and SignOut are as a folder page's
	// (Folder).
	User            string
	ByToken         bool
	May             []string
	SignIn, SignOut string
	// Received are the files a form just stored, listed as sent.
	Received []Received
	// Nonce is the nonce of the policy the page is sent with; required.
	Nonce string
}

// Received is a file stored from the upload page's form.
type Received struct {
	Name   string
	Size   int64
	SHA256 string
}

// uploadPage is the data the upload template renders.
type uploadPage struct {
	Title, Heading, Folder, SentKey string
	Terms                           []string
	Upload                          *Upload
	Link                            bool
	Back                            bool // the visitor may see the folder: a link to it
	User, May, SignIn, SignOut      string
	ByToken                         bool
	Received                        []received
	Nonce                           string
}

type received struct{ Name, Size, SHA256 string }

// UploadPage writes the upload page p to w. It fails, writing nothing,
// when p has no Nonce.
func (u *UI) UploadPage(w io.Writer, p UploadPage) error {
	if p.Nonce == "" {
		return errors.New("ui: an upload page needs the nonce of its policy")
	}
	d := uploadPage{Title: p.Heading, Heading: p.Heading, Folder: p.Folder, SentKey: p.SentKey, Upload: p.Upload, Link: p.Link,
		User: p.User, ByToken: p.ByToken, May: sentence(p.May), SignIn: p.SignIn, SignOut: p.SignOut, Nonce: p.Nonce, Terms: terms(p), Back: !p.Blind && !p.Link}
	if d.User != "" || d.ByToken {
		d.SignIn = ""
	}
	for _, r := range p.Received {
		d.Received = append(d.Received, received{Name: largo.EscapeName(r.Name), Size: largo.FormatSize(r.Size), SHA256: r.SHA256})
	}
	return u.page().ExecuteTemplate(w, "upload", d)
}

// terms says what the page's folder takes, one sentence each.
func terms(p UploadPage) []string {
	var t []string
	if p.MaxSize > 0 {
		t = append(t, "Each file may be up to "+largo.FormatSize(p.MaxSize)+".")
	}
	if p.CreateOnly {
		t = append(t, "A name already taken here is refused: rename your file and send it again.")
	} else {
		t = append(t, "A file with the name of one already here replaces it.")
	}
	if p.FileTTL > 0 {
		t = append(t, "Each file you send is removed "+Duration(p.FileTTL)+" after it arrives.")
	}
	if !p.Expires.IsZero() {
		t = append(t, "This link works until "+FormatTime(p.Expires)+" UTC.")
	}
	if p.Blind {
		t = append(t, "You see only what you send from this browser, listed below: nothing else of the folder.")
	}
	return t
}

// Duration writes a span as people say it: "7 days", "1 hour", "90
// minutes"; in Go's notation when it is no whole number of minutes.
func Duration(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}} {
		if d >= u.d && d%u.d == 0 {
			return plural(int(d/u.d), u.name)
		}
	}
	return d.String()
}
