package s3

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"largo"
)

// Listings ask for keys encoded as URLs (encoding-type=url): a key may
// hold bytes that XML cannot carry, and a server then sends a page that
// no client can read, or a name that is not the key's. Servers that
// encode do not agree on how: Amazon S3 encodes as a form does (a plus
// for a space, %2B for a plus), others as a URL's path (%20 for a space,
// a plus left as it is), and some do not encode at all (and say so, with
// no EncodingType in the answer). Only a plus is read differently; which
// way the server goes is learnt from the first page that shows it (a
// %20, or a %2B), or, failing that, by asking for the key one way.

// What a plus in a url-encoded key stands for (Store.plus).
const (
	plusUnknown int32 = iota
	plusSpace         // form encoding
	plusPlus          // path encoding
)

// lister is the Store's client as a paginator takes it, with every
// listing's keys decoded (listObjects).
type lister struct{ s *Store }

func (l lister) ListObjectsV2(ctx context.Context, in *awss3.ListObjectsV2Input, opts ...func(*awss3.Options)) (*awss3.ListObjectsV2Output, error) {
	return l.s.listObjects(ctx, in, opts...)
}

// pages returns a paginator over the listing in, its keys decoded.
func (s *Store) pages(in *awss3.ListObjectsV2Input) *awss3.ListObjectsV2Paginator {
	return awss3.NewListObjectsV2Paginator(lister{s}, in)
}

// listObjects is one ListObjectsV2 asking for url-encoded keys, whose
// answer's keys and common prefixes it decodes in place.
func (s *Store) listObjects(ctx context.Context, in *awss3.ListObjectsV2Input, opts ...func(*awss3.Options)) (*awss3.ListObjectsV2Output, error) {
	in.EncodingType = types.EncodingTypeUrl
	out, err := s.api.ListObjectsV2(ctx, in, opts...)
	if err != nil || out.EncodingType != types.EncodingTypeUrl {
		return out, err
	}
	plus := s.plus.Load()
	if plus == plusUnknown {
		if plus, err = s.learnPlus(ctx, out); err != nil {
			return nil, err
		}
	}
	for i := range out.Contents {
		if out.Contents[i].Key, err = decodeKey(out.Contents[i].Key, plus); err != nil {
			return nil, err
		}
	}
	for i := range out.CommonPrefixes {
		if out.CommonPrefixes[i].Prefix, err = decodeKey(out.CommonPrefixes[i].Prefix, plus); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// learnPlus returns what a plus stands for in the url-encoded page out:
// told by the page itself when it holds a %20 or a %2B, else, when a key
// has a plus, by asking for that key read as a plus. It keeps what it
// learnt for the later pages.
func (s *Store) learnPlus(ctx context.Context, out *awss3.ListObjectsV2Output) (int32, error) {
	var encoded []string
	for _, o := range out.Contents {
		encoded = append(encoded, aws.ToString(o.Key))
	}
	for _, p := range out.CommonPrefixes {
		encoded = append(encoded, aws.ToString(p.Prefix))
	}
	var ambiguous string
	for _, e := range encoded {
		switch {
		case strings.Contains(e, "%20"):
			s.plus.Store(plusPlus)
			return plusPlus, nil
		case strings.Contains(e, "%2B") || strings.Contains(e, "%2b"):
			s.plus.Store(plusSpace)
			return plusSpace, nil
		case ambiguous == "" && strings.Contains(e, "+"):
			ambiguous = e
		}
	}
	if ambiguous == "" {
		return plusUnknown, nil // nothing to tell, and nothing to read
	}
	key, err := decodeKey(&ambiguous, plusPlus)
	if err != nil {
		return plusUnknown, err
	}
	k := aws.ToString(key)
	found := false
	if strings.HasSuffix(k, "/") {
		page, err := s.api.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &k, MaxKeys: aws.Int32(1)})
		if err != nil {
			return plusUnknown, err
		}
		found = len(page.Contents) > 0
	} else {
		_, err := s.headKey(ctx, k)
		if err != nil && !errors.Is(mapErr(k, err), largo.ErrNotFound) {
			return plusUnknown, mapErr(k, err)
		}
		found = err == nil
	}
	plus := plusSpace
	if found {
		plus = plusPlus
	}
	s.plus.Store(plus)
	return plus, nil
}

// decodeKey decodes a url-encoded key: %XX is the byte XX, and a plus
// what plus says (a space when unknown: nothing on the page told).
func decodeKey(k *string, plus int32) (*string, error) {
	e := aws.ToString(k)
	if !strings.ContainsAny(e, "%+") {
		return k, nil
	}
	b := make([]byte, 0, len(e))
	for i := 0; i < len(e); i++ {
		switch c := e[i]; {
		case c == '%':
			if i+2 >= len(e) || !isHex(e[i+1]) || !isHex(e[i+2]) {
				return nil, fmt.Errorf("listing: a key badly encoded: %q", e)
			}
			b = append(b, unhex(e[i+1])<<4|unhex(e[i+2]))
			i += 2
		case c == '+' && plus != plusPlus:
			b = append(b, ' ')
		default:
			b = append(b, c)
		}
	}
	return aws.String(string(b)), nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
