package s3

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"largo"
)

// S3 servers differ where largo depends on them: whether they apply
// If-None-Match and If-Match to writes, and under concurrent requests;
// whether they take a checksum trailer. PrepareWrites finds out with a
// few requests on probe objects, and the Store writes accordingly: where
// the conditions hold, several instances may share the bucket; where they
// do not, one instance only, whose conditional writes are made under
// locks of its own process (the key's lock for files; the records' own
// lock, in package record, for the state area, which then refuses
// conditional writes). The instance that keeps the bucket to itself is
// the caller's to enforce (a lease in the state area).

// Instances says whether several largo instances may share the bucket.
type Instances int

// The ways of sharing a bucket.
const (
	// InstancesAuto shares the bucket where the server applies
	// conditional writes (PrepareWrites finds out), and keeps it to one
	// instance otherwise.
	InstancesAuto Instances = iota
	// InstancesMany shares the bucket: PrepareWrites fails on a server
	// that does not apply conditional writes.
	InstancesMany
	// InstancesOne keeps the bucket to one instance: conditional writes
	// are made under locks of this process, whatever the server.
	InstancesOne
)

// Checksum says how a body streamed as it arrives is guarded.
type Checksum int

// The ways of guarding a streamed body.
const (
	// ChecksumAuto sends a CRC32 trailer where the server takes it
	// (PrepareWrites finds out), and none otherwise.
	ChecksumAuto Checksum = iota
	// ChecksumTrailer sends a CRC32 trailer (aws-chunked): PrepareWrites
	// fails on a server that refuses it.
	ChecksumTrailer
	// ChecksumOff sends the body as it is (UNSIGNED-PAYLOAD), as the
	// part of a multipart upload, which a body cut short cannot complete.
	ChecksumOff
)

// ErrNotShared is PrepareWrites' refusal of InstancesMany on a server
// that does not apply conditional writes.
var ErrNotShared = errors.New("several instances cannot share the bucket")

// ErrNoTrailer is PrepareWrites' refusal of ChecksumTrailer on a server
// that refuses checksum trailers.
var ErrNoTrailer = errors.New("the S3 server refuses checksum trailers")

// Engine is what PrepareWrites found of the server.
type Engine struct {
	// Shared is true when several instances may share the bucket:
	// the server applies conditional writes, and the Store sends them.
	Shared bool
	// Gaps say what the server lacks of conditional writes, each a few
	// words ("ignores If-Match on DELETE"), none when it lacks nothing
	// or was not asked (InstancesOne).
	Gaps []string
	// Trailers is true when streamed bodies carry a checksum trailer.
	Trailers bool
}

// Engine returns what PrepareWrites found of the server; before it, what
// the Config says.
func (s *Store) Engine() Engine {
	s.engineMu.Lock()
	defer s.engineMu.Unlock()
	return Engine{Shared: s.shared(), Gaps: append([]string(nil), s.gaps...), Trailers: s.trailers.Load()}
}

// shared reports whether the server applies If-None-Match and If-Match
// to the Store's writes (see PrepareWrites), so that instances sharing
// the bucket agree; false where this process applies them to its own
// writes (one instance). Either way, every write's condition is applied.
func (s *Store) shared() bool { return !s.local.Load() }

// probeCreates is how many creates of one key the probe sends at once:
// exactly one must succeed.
const probeCreates = 4

// PrepareWrites checks, before a server takes writes, that the credentials
// may write to the bucket, and finds out what the server takes (see the
// comment at the top of this file), with a few requests on probe objects
// in largo's state folder, removed afterwards: If-None-Match: * on PUT,
// alone and from several requests at once (exactly one must win), and on
// the completion of a multipart upload; If-Match on PUT and on DELETE; a
// streamed body with a checksum trailer. Without PrepareWrites, the
// server is assumed to take all of them. It removes nothing else (several
// instances may be writing: the multipart uploads that interrupted writes
// leave are Sweep's, by age), and returns 0.
func (s *Store) PrepareWrites(ctx context.Context) (int, error) {
	var gaps []string
	key := s.probeKey()
	defer s.dropProbe(ctx, key)
	err := s.probePut(ctx, key, s.instances != InstancesOne)
	if code, _, _, _ := apiError(err); err != nil && (code == "NotImplemented" || refusedNotImplemented(err)) {
		gaps = append(gaps, "refuses If-None-Match and If-Match on writes (501)")
		err = s.probePut(ctx, key, false)
	}
	if err != nil {
		return 0, fmt.Errorf("bucket %q refuses writes: %v", s.bucket, oneLine(errText(err)))
	}
	if s.instances != InstancesOne && len(gaps) == 0 {
		if gaps, err = s.probeConditions(ctx, key); err != nil {
			return 0, fmt.Errorf("bucket %q: probing conditional writes: %v", s.bucket, oneLine(errText(err)))
		}
	}
	trailers, err := s.probeTrailer(ctx, key+"-trailer")
	if err != nil {
		return 0, err
	}
	s.engineMu.Lock()
	defer s.engineMu.Unlock()
	s.gaps = gaps
	s.trailers.Store(trailers)
	switch {
	case s.instances == InstancesOne:
		s.local.Store(true)
	case len(gaps) == 0:
		s.local.Store(false)
	case s.instances == InstancesMany:
		return 0, fmt.Errorf("bucket %q: the S3 server %s: %w", s.bucket, strings.Join(gaps, ", "), ErrNotShared)
	default:
		s.local.Store(true)
	}
	return 0, nil
}

// probeKey returns a new key for a probe object.
func (s *Store) probeKey() string {
	var rnd [8]byte
	rand.Read(rnd[:])
	return s.key(largo.StateDir + "/probe-" + hex.EncodeToString(rnd[:]))
}

// dropProbe removes the probe objects of key, whatever the request
// that made them came to.
func (s *Store) dropProbe(ctx context.Context, key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	for _, k := range []string{key, key + "-race", key + "-trailer"} {
		s.api.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &s.bucket, Key: &k})
	}
}

// probePut puts a small probe object at key, only if there is none when
// excl.
func (s *Store) probePut(ctx context.Context, key string, excl bool) error {
	in := &awss3.PutObjectInput{Bucket: &s.bucket, Key: &key, Body: strings.NewReader("probe"), ContentLength: aws.Int64(5)}
	if excl {
		in.IfNoneMatch = aws.String("*")
	}
	_, err := s.api.PutObject(ctx, in)
	return err
}

// probeConditions returns what the server lacks of conditional writes,
// probed on the object at key, which it may remove.
func (s *Store) probeConditions(ctx context.Context, key string) ([]string, error) {
	const mismatch = `"largo-probe-mismatch"`
	checks := []struct {
		gap  string
		send func() error
	}{
		{"If-None-Match: * on PUT", func() error { return s.probePut(ctx, key, true) }},
		{"If-None-Match: * on the completion of a multipart upload", func() error { return s.probeMultipart(ctx, key) }},
		{"If-Match on PUT", func() error {
			_, err := s.api.PutObject(ctx, &awss3.PutObjectInput{Bucket: &s.bucket, Key: &key, Body: strings.NewReader("probe"), ContentLength: aws.Int64(5), IfMatch: aws.String(mismatch)})
			return err
		}},
		// Last: a server that ignores it removes the object.
		{"If-Match on DELETE", func() error {
			_, err := s.api.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &s.bucket, Key: &key, IfMatch: aws.String(mismatch)})
			return err
		}},
	}
	var gaps []string
	for _, c := range checks {
		err := c.send()
		switch {
		case err == nil:
			gaps = append(gaps, "ignores "+c.gap)
		case refusedNotImplemented(err):
			gaps = append(gaps, "refuses "+c.gap+" (501)")
		case !errors.Is(mapErr("", err), largo.ErrPrecondition):
			return nil, err
		}
	}
	won, err := s.probeRace(ctx, key+"-race")
	if err != nil {
		return nil, err
	}
	if won > 1 {
		gaps = append(gaps, fmt.Sprintf("let %d of %d creates of one key with If-None-Match: * sent at once succeed", won, probeCreates))
	}
	return gaps, nil
}

// probeRace sends probeCreates creates of key with If-None-Match: * at
// once and returns how many succeeded; the others must be refused.
func (s *Store) probeRace(ctx context.Context, key string) (int, error) {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		won  int
		errs []error
	)
	start := make(chan struct{})
	for range probeCreates {
		wg.Go(func() {
			<-start
			err := s.probePut(ctx, key, true)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case !errors.Is(mapErr("", err), largo.ErrPrecondition):
				errs = append(errs, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if won == 0 {
		return 0, errors.Join(errs...)
	}
	return won, nil
}

// probeMultipart completes a multipart upload to the existing key under
// If-None-Match: *, which must be refused.
func (s *Store) probeMultipart(ctx context.Context, key string) error {
	out, err := s.api.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		return err
	}
	id := out.UploadId
	defer s.api.AbortMultipartUpload(context.WithoutCancel(ctx), &awss3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: &key, UploadId: id})
	p, err := s.api.UploadPart(ctx, &awss3.UploadPartInput{
		Bucket:        &s.bucket,
		Key:           &key,
		UploadId:      id,
		PartNumber:    aws.Int32(1),
		Body:          strings.NewReader("probe"),
		ContentLength: aws.Int64(5),
	})
	if err != nil {
		return err
	}
	_, err = s.api.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{
		Bucket:          &s.bucket,
		Key:             &key,
		UploadId:        id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: p.ETag}}},
		IfNoneMatch:     aws.String("*"),
	})
	return err
}

// probeTrailer reports whether the server takes a streamed body with a
// checksum trailer, put at key, as the Store's Checksum asks.
func (s *Store) probeTrailer(ctx context.Context, key string) (bool, error) {
	if s.checksum == ChecksumOff {
		return false, nil
	}
	_, err := s.api.PutObject(ctx, &awss3.PutObjectInput{
		Bucket:        &s.bucket,
		Key:           &key,
		Body:          strings.NewReader("probe"),
		ContentLength: aws.Int64(5),
	}, chunkedTrailer)
	switch {
	case err == nil:
		return true, nil
	case !answered(err):
		return false, fmt.Errorf("bucket %q: probing checksum trailers: %v", s.bucket, oneLine(errText(err)))
	case s.checksum == ChecksumTrailer:
		return false, fmt.Errorf("bucket %q: %w: %v", s.bucket, ErrNoTrailer, oneLine(errText(err)))
	}
	return false, nil
}

// refusedNotImplemented reports whether err is a server's answer that it
// does not implement what the request asked (501).
func refusedNotImplemented(err error) bool {
	code, status, _, ok := apiError(err)
	return ok && (status == http.StatusNotImplemented || code == "NotImplemented")
}

// serverCond returns the condition to send to the server with a write
// under cond: none where this process applies it (one instance).
func (s *Store) serverCond(cond largo.Condition) largo.Condition {
	if s.local.Load() {
		return largo.Condition{}
	}
	return cond
}

// lockCond, where this process applies conditions (one instance) and
// cond is one, takes the lock of key and checks cond against the object
// there now; the write then goes without a condition before unlock.
// Elsewhere it does nothing.
func (s *Store) lockCond(ctx context.Context, name, key string, cond largo.Condition) (unlock func(), err error) {
	if !s.local.Load() || cond == (largo.Condition{}) {
		return func() {}, nil
	}
	unlock = s.locks.Lock(key)
	o, err := s.headKey(ctx, key)
	exists := err == nil
	if err != nil && !errors.Is(mapErr(name, err), largo.ErrNotFound) {
		unlock()
		return nil, mapErr(name, err)
	}
	if err := cond.Check(name, fileInfo(name, o), exists); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}
