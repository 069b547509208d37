package dav

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"

	"golang.org/x/net/webdav"

	"largo"
	"largo/wire"
)

// Dead properties (PROPPATCH) are one record per file in the state area,
// under propPrefix and the file's escaped name: a JSON list of the
// properties, each with its namespace, local name, language and inner
// XML as the client sent them. Windows Explorer keeps its Win32 times and
// attributes there; litmus checks namespaces, languages and values.

const propPrefix = "dav/props/"

func propKey(name string) string { return propPrefix + escape(name) }

// maxProps bounds a file's dead properties, in bytes of the record,
// which every PROPFIND of the file reads whole.
const maxProps = 256 << 10

// MaxFileProps bounds the number of one file's dead properties. A
// PROPPATCH past it, or past maxProps, changes nothing and answers 507
// for its properties (RFC 4918, 9.2.1).
const MaxFileProps = 1024

// storedProp is a property as its record holds it.
type storedProp struct {
	Space string `json:"ns"`
	Local string `json:"name"`
	Lang  string `json:"lang,omitempty"`
	Inner string `json:"xml"`
}

// loadProps reads the dead properties of name.
func loadProps(ctx context.Context, st largo.State, name string) (map[xml.Name]webdav.Property, error) {
	m, _, err := readProps(ctx, st, name)
	return m, err
}

// readProps reads the dead properties of name, and the size of their
// record.
func readProps(ctx context.Context, st largo.State, name string) (map[xml.Name]webdav.Property, int64, error) {
	b, err := st.Get(ctx, propKey(name))
	if errors.Is(err, largo.ErrNotFound) {
		return map[xml.Name]webdav.Property{}, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	var list []storedProp
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, 0, fmt.Errorf("properties of %s: %w", name, err)
	}
	m := make(map[xml.Name]webdav.Property, len(list))
	for _, p := range list {
		n := xml.Name{Space: p.Space, Local: p.Local}
		m[n] = webdav.Property{XMLName: n, Lang: p.Lang, InnerXML: []byte(p.Inner)}
	}
	return m, int64(len(b)), nil
}

// keeper admits the record of a file's dead properties at a size, in
// place of the one before: the write pipeline's quotas
// (ingest.Pipeline.KeepBeside), refused with an error wrapping
// largo.ErrNoSpace.
type keeper func(size int64) error

// saveProps writes the dead properties of name, whose record took old
// bytes, or removes their record when none is left; keep admits the new
// record's size first.
func saveProps(ctx context.Context, st largo.State, keep keeper, name string, m map[xml.Name]webdav.Property, old int64) error {
	if len(m) == 0 {
		if err := st.Delete(ctx, propKey(name)); err != nil {
			return err
		}
		return keep(0)
	}
	if len(m) > MaxFileProps {
		return errTooManyProps
	}
	list := make([]storedProp, 0, len(m))
	for n, p := range m {
		list = append(list, storedProp{Space: n.Space, Local: n.Local, Lang: p.Lang, Inner: string(p.InnerXML)})
	}
	b, err := json.Marshal(list)
	if err != nil {
		return err
	}
	if len(b) > maxProps {
		return errTooManyProps
	}
	if err := keep(int64(len(b))); err != nil {
		return err
	}
	if err := st.Put(ctx, propKey(name), b); err != nil {
		keep(old)
		return err
	}
	return nil
}

var errTooManyProps = fmt.Errorf("dead properties over %d bytes or %d properties: %w", maxProps, MaxFileProps, largo.ErrTooLarge)

// patchProps applies patches to the properties of name, all or none. A
// change the bounds or the quotas (keep) cannot take changes nothing and
// answers 507 for the properties, with the reason (RFC 4918, 9.2.1).
func patchProps(ctx context.Context, st largo.State, keep keeper, name string, patches []webdav.Proppatch) ([]webdav.Propstat, error) {
	m, old, err := readProps(ctx, st, name)
	if err != nil {
		return nil, err
	}
	ok := webdav.Propstat{Status: http.StatusOK}
	for _, p := range patches {
		for _, prop := range p.Props {
			if prop.XMLName == lockDiscoveryName {
				continue // a live property, never recorded
			}
			if p.Remove {
				delete(m, prop.XMLName)
			} else {
				m[prop.XMLName] = prop
			}
			ok.Props = append(ok.Props, webdav.Property{XMLName: prop.XMLName})
		}
	}
	if err := saveProps(ctx, st, keep, name, m, old); err != nil {
		if errors.Is(err, largo.ErrTooLarge) || errors.Is(err, largo.ErrNoSpace) {
			ok.Status = http.StatusInsufficientStorage
			_, ok.ResponseDescription = wire.Status(err)
			if errors.Is(err, errTooManyProps) {
				// Not the upload size limit that wire.Status names.
				ok.ResponseDescription = errTooManyProps.Error()
			}
			return []webdav.Propstat{ok}, nil
		}
		return nil, err
	}
	return []webdav.Propstat{ok}, nil
}

// moveProps moves the properties of from, and of all below it, to to.
func moveProps(ctx context.Context, st largo.State, from, to string) error {
	keys := []string{propKey(from)}
	for rec, err := range st.List(ctx, belowPrefix(propPrefix, from)) {
		if err != nil {
			return err
		}
		keys = append(keys, rec.Key)
	}
	fromEsc, toEsc := escape(from), escape(to)
	for _, k := range keys {
		b, err := st.Get(ctx, k)
		if errors.Is(err, largo.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		nk := propPrefix + toEsc + strings.TrimPrefix(strings.TrimPrefix(k, propPrefix), fromEsc)
		if err := st.Put(ctx, nk, b); err != nil {
			return err
		}
		if err := st.Delete(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// propNames returns the names, among the children of dir, that have dead
// properties: one listing, so that a PROPFIND of a folder reads the
// records of only those.
func propNames(ctx context.Context, st largo.State, dir string) (map[string]bool, error) {
	set := map[string]bool{}
	pre := belowPrefix(propPrefix, dir)
	for rec, err := range st.List(ctx, pre) {
		if err != nil {
			return nil, err
		}
		child, err := unescape(strings.TrimPrefix(rec.Key, propPrefix))
		if err != nil || child == dir || largo.Parent(child) != dir {
			continue
		}
		elem := path.Base(child)
		set[elem] = true
	}
	return set, nil
}
