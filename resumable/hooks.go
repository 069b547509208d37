package resumable

import (
	"context"
	"strings"

	tusd "github.com/tus/tusd/v2/pkg/handler"

	"largo/ingest"
)

// keyHooked begins the metadata keys that keep, until the upload is
// placed, what the pre-upload hook answered at its creation. Like every
// key of the server's own (serverKeys), a client may not send them.
const keyHooked = serverKeys + "hook-"

// accept admits the upload t at its creation through the write pipeline
// (ingest.Pipeline.Accept: its checks, then the pre-upload hook), and
// keeps the hook's answer in meta.
func (h *Handler) accept(ctx context.Context, t ingest.Target, meta tusd.MetaData) error {
	t, err := h.cfg.Writes.Accept(ctx, t)
	if err != nil {
		return err
	}
	keepHooked(meta, t.Hooked)
	return nil
}

// ask puts an upload already checked to the pre-upload hook alone (a
// final upload, whose room may be its partials'), and keeps the answer in
// meta.
func (h *Handler) ask(ctx context.Context, t ingest.Target, meta tusd.MetaData) error {
	t, err := h.cfg.Writes.Ask(ctx, t)
	if err != nil {
		return err
	}
	keepHooked(meta, t.Hooked)
	return nil
}

func keepHooked(meta tusd.MetaData, hooked map[string]string) {
	for k, v := range hooked {
		meta[keyHooked+k] = v
	}
}

// hookFields reads from an upload's metadata what the hooks are told:
// the protocol that carried it, what the client said of the file (every
// key not the server's own), and what the pre-upload hook answered.
func hookFields(meta tusd.MetaData) (protocol string, client, hooked map[string]string) {
	protocol = "tus"
	if meta[keyProtocol] != "" {
		protocol = meta[keyProtocol]
	}
	for k, v := range meta {
		switch {
		case strings.HasPrefix(k, keyHooked):
			if hooked == nil {
				hooked = map[string]string{}
			}
			hooked[strings.TrimPrefix(k, keyHooked)] = v
		case !strings.HasPrefix(strings.ToLower(k), serverKeys):
			if client == nil {
				client = map[string]string{}
			}
			client[k] = v
		}
	}
	return protocol, client, hooked
}
