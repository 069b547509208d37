package serve

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"largo"
	"largo/ingest"
	"largo/wire"
)

// Form limits: the fields that are not files are small by nature.
const (
	maxFormParts = 1000
	maxFieldSize = 64 << 10
)

// Stored is one file a multipart POST stored, as the JSON answer lists it.
type Stored struct {
	// Name is the file's name, Path its URL path.
	Name string `json:"name"`
	Path string `json:"path"`
	// Size is its length in bytes, SHA256 the hex SHA-256 of its bytes.
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	ETag   string `json:"etag"`
	// Created is false when the file replaced another.
	Created bool `json:"created"`
}

// postForm answers a browser's multipart/form-data POST to a folder: the
// parts are read one by one, as they arrive (Request.MultipartReader,
// never ParseMultipartForm), and each file part is stored through the
// write pipeline like a PUT to the folder, under its file name. The answer
// is 201 with the JSON list of the files stored, or for a browser that
// asks for HTML, the folder's upload page listing them (uploadpage.go). If-None-Match: * applies
// to every file. A failure ends the request; the files stored before it
// stay.
func (h *Handler) postForm(w http.ResponseWriter, r *http.Request, folder string) error {
	cond, err := wire.Condition(r.Header)
	if err != nil {
		return err
	}
	if cond.IfMatch != "" {
		return fmt.Errorf("If-Match on a form of several files: %w", wire.ErrBadCondition)
	}
	ctx := r.Context()
	// The form's length bounds its files: refused at once when the space
	// cannot hold it, before a byte is read.
	if err := h.cfg.Writes.CheckSpace(ctx, folder, r.ContentLength); err != nil {
		return err
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return fmt.Errorf("%w: %w", errNotForm, err)
	}
	stored := []Stored{}
	for parts := 0; ; parts++ {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return formErr(err)
		}
		if parts >= maxFormParts {
			return fmt.Errorf("%w: more than %d parts", errBadForm, maxFormParts)
		}
		if p.FileName() == "" {
			// A plain field: read past it, within bounds.
			n, err := io.Copy(io.Discard, io.LimitReader(p, maxFieldSize+1))
			if err != nil {
				return formErr(err)
			}
			if n > maxFieldSize {
				return fmt.Errorf("%w: a field over %d bytes", errBadForm, maxFieldSize)
			}
			continue
		}
		s, err := h.storePart(r, folder, p, p.FileName(), cond)
		if err != nil {
			return err
		}
		stored = append(stored, s)
	}
	if len(stored) == 0 {
		return fmt.Errorf("%w: no file in the form", errBadForm)
	}
	if acceptsHTML(r) && !wantsJSON(r) {
		// A browser's form (an upload page's, without JavaScript): the
		// page again, with what was stored.
		return h.uploadPage(w, r, folder, http.StatusCreated, stored)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusCreated)
	return json.NewEncoder(w).Encode(stored)
}

// storePart stores one file part of a form.
func (h *Handler) storePart(r *http.Request, folder string, part io.Reader, filename string, cond largo.Condition) (Stored, error) {
	ctx := r.Context()
	name, err := largo.ParseName("/" + largo.Join(folder, filename))
	if err != nil {
		return Stored{}, err
	}
	wr, err := h.cfg.Writes.Begin(ctx, ingest.Target{Name: name, Size: -1, Cond: cond, Tokens: wire.LockTokens(r.Header), Protocol: "form"})
	if err != nil {
		return Stored{}, err
	}
	defer wr.Abort()
	if _, err := wr.ReadFrom(part); err != nil {
		return Stored{}, formErr(err)
	}
	res, err := wr.Commit(context.WithoutCancel(ctx))
	if err != nil {
		return Stored{}, err
	}
	return Stored{
		Name:    res.Info.Name,
		Path:    (&url.URL{Path: "/" + name}).EscapedPath(),
		Size:    res.Info.Size,
		SHA256:  hex.EncodeToString(res.SHA256),
		ETag:    res.Info.ETag,
		Created: res.Created,
	}, nil
}

// formErr classifies an error met reading a form: the body's own errors
// and the pipeline's pass, what the multipart reader says of the syntax
// is errBadForm.
func formErr(err error) error {
	if errors.Is(err, largo.ErrBodyTimeout) || errors.Is(err, largo.ErrBodyIncomplete) || errors.Is(err, largo.ErrTooLarge) || errors.Is(err, largo.ErrNoSpace) {
		return err
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "multipart") {
		return fmt.Errorf("%w: %w", errBadForm, err)
	}
	return ingest.BodyErr(err)
}
