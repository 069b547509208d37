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
	b, err := st.Get(ctx, propKey(name))
	if errors.Is(err, largo.ErrNotFound) {
		return map[xml.Name]webdav.Property{}, nil
	}
	if err != nil {
		return nil, err
	}
	var list []storedProp
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("properties of %s: %w", name, err)
	}
	m := make(map[xml.Name]webdav.Property, len(list))
	for _, p := range list {
		n := xml.Name{Space: p.Space, Local: p.Local}
		m[n] = webdav.Property{XMLName: n, Lang: p.Lang, InnerXML: []byte(p.Inner)}
	}
	return m, nil
}

// saveProps writes the dead properties of name, or removes its record
// when none is left.
func saveProps(ctx context.Context, st largo.State, name string, m map[xml.Name]webdav.Property) error {
	if len(m) == 0 {
		return st.Delete(ctx, propKey(name))
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
	return st.Put(ctx, propKey(name), b)
}

var errTooManyProps = fmt.Errorf("dead properties over %d bytes or %d properties: %w", maxProps, MaxFileProps, largo.ErrTooLarge)

// patchProps applies patches to the properties of name, all or none.
func patchProps(ctx context.Context, st largo.State, name string, patches []webdav.Proppatch) ([]webdav.Propstat, error) {
	m, err := loadProps(ctx, st, name)
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
	if err := saveProps(ctx, st, name, m); err != nil {
		if errors.Is(err, largo.ErrTooLarge) {
			ok.Status = http.StatusInsufficientStorage
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
		if err != nil || child == dir || parent(child) != dir {
			continue
		}
		elem := path.Base(child)
		set[elem] = true
	}
	return set, nil
}
