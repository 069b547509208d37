package encode

import (
	"bufio"
	"fmt"
	"io"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// encoder is a streaming compressor that can be reused: Reset points it at
// a new destination and starts a new stream.
type encoder interface {
	io.WriteCloser
	Flush() error
	Reset(w io.Writer)
}

// settings are the parameters of every coding at one level.
type settings struct {
	zstdLevel  zstd.EncoderLevel
	zstdWindow int
	gzipLevel  int
	brQuality  int
	brWindow   int // log2 of the window
}

// levelSettings holds the settings of each Level. The windows bound the
// memory of an encoder, whatever the size of the file: measured heap per
// encoder, with the largo test log, is about 1.1 MiB (zstd), 0.8 MiB (gzip)
// and 2 MiB (brotli) at Fast; 3.3, 1.0 and 7 MiB at Default; 6, 1.4 and
// 14 MiB at Best.
var levelSettings = [...]settings{
	Fast:    {zstd.SpeedFastest, 256 << 10, 1, 1, 18},
	Default: {zstd.SpeedDefault, 1 << 20, 6, 4, 18},
	Best:    {zstd.SpeedBetterCompression, 1 << 20, 9, 6, 20},
	Max:     {zstd.SpeedBestCompression, 8 << 20, 9, 11, 22},
}

// memoryPerStream is the documented bound on the resident memory one
// compressing response may add at each level: the largest encoder of the
// level, the Go heap's growth around it, and the response's buffers.
var memoryPerStream = [...]int64{
	Fast:    4 << 20,
	Default: 12 << 20,
	Best:    24 << 20,
}

// NewWriter returns a compressor in coding c at level l that writes to w;
// Close ends the stream. It is for one-off streams (precompression, tests):
// responses use the pooled encoders of an Encoders.
func NewWriter(w io.Writer, c Coding, l Level) (io.WriteCloser, error) {
	if l < 0 || int(l) >= len(levelSettings) {
		return nil, fmt.Errorf("no such compression level %d", l)
	}
	return newEncoder(w, c, levelSettings[l])
}

func newEncoder(w io.Writer, c Coding, s settings) (encoder, error) {
	switch c {
	case Zstd:
		return zstd.NewWriter(w,
			zstd.WithEncoderLevel(s.zstdLevel),
			zstd.WithWindowSize(s.zstdWindow),
			// One goroutine per stream: responses are already concurrent,
			// and more would multiply the memory of each.
			zstd.WithEncoderConcurrency(1),
			zstd.WithLowerEncoderMem(true))
	case Gzip:
		return gzip.NewWriterLevel(w, s.gzipLevel)
	case Brotli:
		return brotli.NewWriterOptions(w, brotli.WriterOptions{Quality: s.brQuality, LGWin: s.brWindow}), nil
	}
	return nil, fmt.Errorf("no encoder for coding %q", c)
}

// Config configures Encoders. The zero value compresses at Fast with
// DefaultMaxStreams.
type Config struct {
	// Level is the compression level of every response.
	Level Level
	// MaxStreams bounds the responses compressing at once; a response
	// beyond it is sent uncompressed rather than made to wait. Zero means
	// DefaultMaxStreams.
	MaxStreams int
}

// DefaultMaxStreams is the default bound on responses compressing at once.
const DefaultMaxStreams = 32

// Encoders holds the pooled encoders of one level and the slots of the
// responses compressing at once. It is safe for concurrent use.
type Encoders struct {
	level Level
	set   settings
	slots chan struct{}
	pools [len(Codings)]sync.Pool
}

// NewEncoders returns Encoders for cfg. Dynamic compression is limited to
// the levels Fast, Default and Best.
func NewEncoders(cfg Config) (*Encoders, error) {
	if cfg.Level < Fast || cfg.Level > Best {
		return nil, fmt.Errorf("compression level %v is not for responses", cfg.Level)
	}
	if cfg.MaxStreams < 0 {
		return nil, fmt.Errorf("negative number of compressing responses: %d", cfg.MaxStreams)
	}
	if cfg.MaxStreams == 0 {
		cfg.MaxStreams = DefaultMaxStreams
	}
	return &Encoders{level: cfg.Level, set: levelSettings[cfg.Level], slots: make(chan struct{}, cfg.MaxStreams)}, nil
}

// Level returns the level of the encoders.
func (e *Encoders) Level() Level { return e.level }

// MaxStreams returns the bound on responses compressing at once.
func (e *Encoders) MaxStreams() int { return cap(e.slots) }

// MemoryPerStream returns the bound on the resident memory that one
// compressing response adds at this level; MaxStreams times it bounds
// what dynamic compression can add to the process.
func (e *Encoders) MemoryPerStream() int64 { return memoryPerStream[e.level] }

// Active returns the number of responses compressing now.
func (e *Encoders) Active() int { return len(e.slots) }

// acquire takes a slot without waiting; false when all are taken.
func (e *Encoders) acquire() bool {
	select {
	case e.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (e *Encoders) release() { <-e.slots }

// streamBuffer is the size of the buffer between an encoder and the
// response. Encoders emit their output in small pieces (deflate's bit
// writer every 240 bytes); gathering them saves a system call, and a
// write-deadline update, per piece.
const streamBuffer = 32 << 10

// stream is a pooled encoder and the buffer that gathers its output.
type stream struct {
	enc encoder
	buf *bufio.Writer
}

// Write compresses p.
func (s *stream) Write(p []byte) (int, error) { return s.enc.Write(p) }

// Flush sends everything compressed so far on.
func (s *stream) Flush() error {
	if err := s.enc.Flush(); err != nil {
		return err
	}
	return s.buf.Flush()
}

// Close ends the compressed stream and sends its end on.
func (s *stream) Close() error {
	if err := s.enc.Close(); err != nil {
		return err
	}
	return s.buf.Flush()
}

// get returns a stream of coding c writing to w, from the pool when one
// is there.
func (e *Encoders) get(c Coding, w io.Writer) (*stream, error) {
	i := c.index()
	if i < 0 {
		return nil, fmt.Errorf("no encoder for coding %q", c)
	}
	if s, ok := e.pools[i].Get().(*stream); ok {
		s.buf.Reset(w)
		s.enc.Reset(s.buf)
		return s, nil
	}
	buf := bufio.NewWriterSize(w, streamBuffer)
	enc, err := newEncoder(buf, c, e.set)
	if err != nil {
		return nil, err
	}
	return &stream{enc: enc, buf: buf}, nil
}

// put returns a finished stream to its pool, pointed at nothing so that
// the pool holds no reference to a response.
func (e *Encoders) put(c Coding, s *stream) {
	s.buf.Reset(io.Discard)
	s.enc.Reset(s.buf)
	e.pools[c.index()].Put(s)
}
