package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/pflag"

	"largo"
	"largo/digests"
	"largo/gate"
	"largo/ingest"
	"largo/listing"
	"largo/record"
	"largo/s3"
	"largo/s3api"
	"largo/serve"
)

// s3Config are the flags of the S3 API.
type s3Config struct {
	listen string
	bucket string
}

func addS3APIFlags(f *pflag.FlagSet, c *s3Config) {
	f.StringVar(&c.listen, "s3-listen", "", "also serve the folder or bucket as one bucket of the S3 API on this address, host:port, through the same access rules, quotas and hooks; requests are signed with the access file's S3 keys (largo s3key), or anonymous (default none)")
	f.StringVar(&c.bucket, "s3-api-bucket", s3api.DefaultBucket, "the name of the one bucket the S3 API (--s3-listen) serves the store as")
}

// s3Sweep is how often the S3 API's expired multipart uploads are
// looked for.
const s3Sweep = 15 * time.Minute

// newS3API makes the S3 API's handler over the gate's store, the write
// pipeline (nil: read-only) and the records, and the worker that removes
// its expired multipart uploads.
func (s *server) newS3API(cfg *serveConfig, gated *gate.Store, writes *ingest.Pipeline, files *record.Files, dg *digests.Keeper, lcfg listing.Config) error {
	if err := s3.CheckBucketName(cfg.s3api.bucket); err != nil {
		return usageErr(fmt.Errorf("--s3-api-bucket: %v", err))
	}
	var uploads *s3api.Uploads
	if writes != nil && files != nil {
		var err error
		uploads, err = s3api.NewUploads(s3api.UploadsConfig{Store: s.store, Records: files.Store(), Expiry: cfg.uploadExpiry, Logger: s.log})
		if err != nil {
			if !errors.Is(err, largo.ErrUnsupported) {
				return failed(fmt.Errorf("--s3-listen: %v", pathErrText(err)))
			}
			s.log.Warn("s3: no multipart uploads on this store", "err", err)
		} else {
			s.sweepEvery(min(max(cfg.uploadExpiry/4, time.Second), s3Sweep), "expired S3 multipart uploads", uploads.Sweep)
		}
	}
	s.s3 = s3api.New(s3api.Config{
		Store:   gated,
		Writes:  writes,
		Keys:    gated.Gate().Access(),
		Bucket:  cfg.s3api.bucket,
		Files:   files,
		Digests: dg,
		Uploads: uploads,
		Listing: lcfg,
		Logger:  s.log,
	})
	return nil
}

// s3Handler is the S3 listener's handler: the S3 API behind the file
// tree's front door (serve.Handler.Front), answering only its own host
// names (with the bucket's virtual-hosted ones) when the main listener
// does.
func (s *server) s3Handler(cfg *serveConfig, front http.Handler) http.Handler {
	hosts := hostNames(s.s3ln.Addr().String(), cfg.access.hosts)
	if hosts == nil {
		return front
	}
	all := append([]string(nil), hosts...)
	for _, h := range hosts {
		if net.ParseIP(h) == nil {
			all = append(all, cfg.s3api.bucket+"."+h)
		}
	}
	return serve.OnlyHosts(all, front)
}
