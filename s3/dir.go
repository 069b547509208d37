package s3

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"largo"
)

var _ largo.DirMaker = (*Store)(nil)

// MakeDir implements largo.DirMaker: an empty folder is a marker object
// named with a trailing slash, put with If-None-Match: * where the server
// applies it, under the key's lock where this process does. A bucket has no rename: a folder is moved by copying and
// removing what it holds (package dav).
func (s *Store) MakeDir(ctx context.Context, name string) error {
	if name == "" {
		return fmt.Errorf("the root: %w", largo.ErrExist)
	}
	if dir := path.Dir(name); dir != "." {
		in, err := s.Stat(ctx, dir)
		switch {
		case err != nil:
			return fmt.Errorf("folder %s: %w", dir, err)
		case !in.IsDir:
			return fmt.Errorf("%s: %w", dir, largo.ErrNotDir)
		}
	}
	key := s.key(name) + "/"
	if s.local.Load() {
		defer s.locks.Lock(key)()
	}
	if _, err := s.Stat(ctx, name); err == nil {
		return fmt.Errorf("%s: %w", name, largo.ErrExist)
	} else if !errors.Is(err, largo.ErrNotFound) {
		return err
	}
	in := &awss3.PutObjectInput{Bucket: &s.bucket, Key: &key, Body: strings.NewReader(""), ContentLength: aws.Int64(0)}
	if s.shared() {
		in.IfNoneMatch = aws.String("*")
	}
	if _, err := s.api.PutObject(ctx, in); err != nil {
		err = mapErr(name, err)
		if errors.Is(err, largo.ErrPrecondition) {
			return fmt.Errorf("%s: %w", name, largo.ErrExist)
		}
		return err
	}
	return nil
}
