package s3

import (
	"context"
	"fmt"
	"time"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"largo"
)

var _ largo.Presigner = (*Store)(nil)

// Presign implements largo.Presigner: a GET of the object of name,
// signed with the Store's credentials for ttl (at most a week, S3's
// bound), at the Store's endpoint, which its holder must be able to
// reach. It costs no request: the object may be gone by the time the URL
// is used, and the store then answers it 404.
func (s *Store) Presign(ctx context.Context, name string, ttl time.Duration) (string, error) {
	key := s.key(name)
	req, err := awss3.NewPresignClient(s.api).PresignGetObject(ctx, &awss3.GetObjectInput{Bucket: &s.bucket, Key: &key}, awss3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("%s: presigning: %w", name, err)
	}
	return req.URL, nil
}
