package encode

import (
	"fmt"
	"io"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// maxDecodeWindow bounds the window a zstd stream may ask a decoder for,
// so that a hostile stream cannot make it allocate without limit. The
// sidecars precompress writes use 8 MiB windows; zstd's command line goes
// up to 128 MiB at its top levels.
const maxDecodeWindow = 128 << 20

// NewReader returns a reader of the content that r holds in coding c
// (identity returns r itself). Close releases the decoder; it does not
// close r. For clients and tests: the server never decodes.
func NewReader(r io.Reader, c Coding) (io.ReadCloser, error) {
	switch c {
	case Identity, "":
		return io.NopCloser(r), nil
	case Gzip:
		return gzip.NewReader(r)
	case Brotli:
		return io.NopCloser(brotli.NewReader(r)), nil
	case Zstd:
		d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxDecodeWindow))
		if err != nil {
			return nil, err
		}
		return zstdReader{d}, nil
	}
	return nil, fmt.Errorf("no decoder for coding %q", c)
}

type zstdReader struct{ *zstd.Decoder }

func (z zstdReader) Close() error { z.Decoder.Close(); return nil }
