package main

import (
	"github.com/spf13/pflag"

	"largo/s3"
)

// addStoreFlags registers on f the flags that say where the files are:
// --store, with storeUsage as its help, and the --s3-* settings of a
// bucket, into the fields of cfg that openStore reads. The endpoint,
// region and credentials also come from the standard AWS variables.
func addStoreFlags(f *pflag.FlagSet, cfg *serveConfig, storeUsage string) {
	cfg.s3PartSize = s3.DefaultPartSize
	f.StringVar(&cfg.store, "store", "", storeUsage)
	f.StringVar(&cfg.s3Endpoint, "s3-endpoint", "", "S3 endpoint URL, http(s)://HOST[:PORT] (default: $AWS_ENDPOINT_URL_S3, else $AWS_ENDPOINT_URL, else Amazon S3)")
	f.StringVar(&cfg.s3Region, "s3-region", "", "S3 region (default: $AWS_REGION, else $AWS_DEFAULT_REGION, else asked of the store)")
	f.BoolVar(&cfg.s3VirtualHost, "s3-virtual-host", false, "address the bucket as BUCKET.HOST instead of HOST/BUCKET (path-style, the default)")
	f.Var(&cfg.s3PartSize, "s3-part-size", "size of the parts of multipart uploads to a bucket, 5MiB to 5GiB; a write of unknown length holds at most this x --s3-part-concurrency in memory")
	f.IntVar(&cfg.s3PartConc, "s3-part-concurrency", s3.DefaultPartConcurrency, "parts of one write of unknown length in memory at once (the one filling and those being sent)")
}
