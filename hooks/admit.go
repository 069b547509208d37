package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode"

	"largo/ingest"
	"largo/wire"
)

// Bounds of the pre-upload hook's answer.
const (
	maxAnswer     = 64 << 10 // bytes of its body read
	maxMessage    = 300      // characters of a refusal's message passed on
	maxMetaKeys   = 32
	maxMetaValue  = 1024
	maxMetaKeyLen = 64
)

// metaKey is what a metadata key the hook answers must look like: it is
// kept in tus metadata, whose keys are tokens.
var metaKey = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// Refusals for want of the pre-upload hook's answer.
var (
	errUnavailable = wire.Refuse(http.StatusServiceUnavailable, "upload hook unavailable: try again later")
	errHookFailed  = wire.Refuse(http.StatusBadGateway, "upload hook failed: try again later")
)

// uploadRequest is the body of a pre-upload hook's request.
type uploadRequest struct {
	Type     string            `json:"type"` // "pre-upload"
	Time     time.Time         `json:"time"`
	Name     string            `json:"name"`
	Size     int64             `json:"size"`
	Protocol string            `json:"protocol,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	who
}

// uploadAnswer is the body of the hook's answer: metadata when it
// accepts, a message when it refuses.
type uploadAnswer struct {
	Metadata map[string]string `json:"metadata"`
	Message  string            `json:"message"`
}

// Admit implements ingest.Hooks: it asks the pre-upload hook. A 2xx
// accepts the upload, with the metadata of a JSON answer; a 4xx refuses
// it with that status and the answer's message; any other answer refuses
// it with 502; no answer within Config.Timeout refuses it with 503, or
// accepts it with Config.FailOpen.
func (h *Hooks) Admit(ctx context.Context, u ingest.Upload) (map[string]string, error) {
	if h.cfg.PreUpload == "" {
		return nil, nil
	}
	body, err := json.Marshal(uploadRequest{Type: "pre-upload", Time: h.cfg.Now().UTC(), Name: u.Name, Size: u.Size, Protocol: u.Protocol, Metadata: u.Metadata, who: principal(ctx)})
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	resp, err := h.post(cctx, h.cfg.PreUpload, newID(), body, nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err() // the client went away
		}
		h.log.Warn("pre-upload hook unavailable", "name", u.Name, "err", err)
		h.obs.HookAdmit("unavailable")
		if h.cfg.FailOpen {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: %w", errUnavailable, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		h.obs.HookAdmit("unavailable")
		if h.cfg.FailOpen {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: %w", errUnavailable, err)
	}
	var ans uploadAnswer
	isJSON := jsonType(resp.Header.Get("Content-Type"))
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		if isJSON && len(bytes.TrimSpace(raw)) > 0 {
			if err := json.Unmarshal(raw, &ans); err != nil {
				h.log.Warn("pre-upload hook answered bad JSON", "name", u.Name, "err", err)
				h.obs.HookAdmit("failed")
				return nil, errHookFailed
			}
		}
		if err := checkMeta(ans.Metadata); err != nil {
			h.log.Warn("pre-upload hook answered bad metadata", "name", u.Name, "err", err)
			h.obs.HookAdmit("failed")
			return nil, errHookFailed
		}
		h.obs.HookAdmit("accepted")
		return ans.Metadata, nil
	case code >= 400 && code < 500:
		if isJSON {
			_ = json.Unmarshal(raw, &ans) // a message, if it holds one
		} else {
			ans.Message = string(raw)
		}
		msg := cleanMessage(ans.Message)
		if msg == "" {
			msg = "upload refused: " + strings.ToLower(http.StatusText(code))
		}
		h.obs.HookAdmit("refused")
		return nil, wire.Refuse(code, msg)
	default:
		h.log.Warn("pre-upload hook failed", "name", u.Name, "status", resp.StatusCode)
		h.obs.HookAdmit("failed")
		return nil, errHookFailed
	}
}

// post sends body to url, the message id, signed at this time, with the
// extra fields hdr.
func (h *Hooks) post(ctx context.Context, url, id string, body []byte, hdr map[string]string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "largo")
	signHeaders(req.Header, h.cfg.Secret, id, h.cfg.Now(), body)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return h.client.Do(req)
}

// jsonType reports whether a Content-Type is JSON's.
func jsonType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// cleanMessage makes a refusal's message fit for a status line's reason
// and a one-line body: its first line, without control characters,
// trimmed and bounded.
func cleanMessage(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > maxMessage {
		s = string(r[:maxMessage])
	}
	return s
}

// checkMeta refuses metadata the upload could not keep: too many keys,
// keys that are no tokens, values too long.
func checkMeta(m map[string]string) error {
	if len(m) > maxMetaKeys {
		return fmt.Errorf("%d metadata keys, at most %d", len(m), maxMetaKeys)
	}
	for k, v := range m {
		if len(k) > maxMetaKeyLen || !metaKey.MatchString(k) {
			return fmt.Errorf("metadata key %q: letters, digits, '.', '_', '-', at most %d", k, maxMetaKeyLen)
		}
		if len(v) > maxMetaValue {
			return fmt.Errorf("metadata %q: a value of %d bytes, at most %d", k, len(v), maxMetaValue)
		}
	}
	return nil
}
