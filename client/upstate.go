package client

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// upload is what a tus upload keeps in the user's cache folder so that the
// next run resumes it rather than starting another.
type upload struct {
	File     string    `json:"file"` // absolute path
	Size     int64     `json:"size"`
	ModTime  time.Time `json:"mtime"`
	Endpoint string    `json:"endpoint"`
	Target   string    `json:"target"` // the folder and name the server was given
	URL      string    `json:"upload_url,omitempty"`
	// A parallel upload (parallel.go) has no URL of its own until its
	// final: its concat-id, the size of its pieces, and each piece's.
	ConcatID  string       `json:"concat_id,omitempty"`
	PieceSize int64        `json:"piece_size,omitempty"`
	Pieces    []pieceState `json:"pieces,omitempty"`
}

// valid reports whether u can be resumed.
func (u *upload) valid() bool {
	if u.ConcatID == "" {
		return u.URL != ""
	}
	return u.PieceSize > 0 && int64(len(u.Pieces)) == (u.Size+u.PieceSize-1)/u.PieceSize
}

// uploadKey names the state of one upload: the same file (path, size,
// modification time) to the same place.
func uploadKey(abs string, fi fs.FileInfo, endpoint, target string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%d\x00%s\x00%s", abs, fi.Size(), fi.ModTime().UnixNano(), endpoint, target)
	return hex.EncodeToString(h.Sum(nil))[:32] + ".json"
}

func (c *Client) stateDir() (string, error) {
	if c.StateDir != "" {
		return c.StateDir, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", localError{fmt.Errorf("no folder for the upload state (%v): set XDG_CACHE_HOME or HOME", err)}
	}
	return filepath.Join(dir, "largo", "uploads"), nil
}

// loadUpload returns the remembered upload under key, or nil.
func (c *Client) loadUpload(key string) (*upload, error) {
	dir, err := c.stateDir()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, localError{err}
	}
	var u upload
	if err := json.Unmarshal(b, &u); err != nil || !u.valid() {
		c.logf("ignoring the unreadable upload state %s", filepath.Join(dir, key))
		return nil, nil
	}
	return &u, nil
}

// saveUpload remembers u under key.
func (c *Client) saveUpload(key string, u *upload) error {
	dir, err := c.stateDir()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return localError{err}
	}
	b, err := json.MarshalIndent(u, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, key), b)
}

// forgetUpload removes the state under key.
func (c *Client) forgetUpload(key string) {
	if dir, err := c.stateDir(); err == nil {
		os.Remove(filepath.Join(dir, key))
	}
}
