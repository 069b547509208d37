package resumable

import (
	"context"
	"fmt"
	"io"
	"iter"
	"os"
	"time"

	tusd "github.com/tus/tusd/v2/pkg/handler"

	"largo"
	"largo/s3"
)

// Staging is where a Handler keeps unfinished uploads: a tusd DataStore
// (with termination and deferred lengths) holding each upload's bytes and
// FileInfo, and what largo keeps beside them. Which one a server uses
// follows from the store it serves: DiskStaging, a folder in the served
// folder's state folder, beside the files a finished upload is renamed
// to; S3Staging, keys in the served bucket's state folder, which every
// instance serving the bucket sees, so that an upload begun through one
// instance can go on through another.
//
// Implementations must be safe for concurrent use.
type Staging interface {
	tusd.DataStore
	tusd.TerminaterDataStore
	tusd.LengthDeferrerDataStore

	// Staged returns the name, in the served store, of a finished
	// upload's bytes (under largo.StateDir), for a store that adopts them
	// (largo.Adopter); "" when the staging is not inside the served store.
	Staged(id string) string
	// Open returns the bytes of a finished upload, for a store that
	// copies them.
	Open(ctx context.Context, id string) (io.ReadCloser, error)
	// Remove removes everything left of an upload, finished or not: its
	// bytes (aborting what holds them), its FileInfo and its hash state.
	Remove(ctx context.Context, id string) error
	// Idle yields the uploads that have received no byte since before.
	Idle(ctx context.Context, before time.Time) iter.Seq2[IdleUpload, error]
	// Pending returns the bytes held by the unfinished uploads, after
	// removing what a crash left half-made. A staging shared by several
	// servers returns 0: each server counts what passes through it.
	Pending(ctx context.Context) (int64, error)
	// LoadHash returns the hash state kept for an upload, or nil.
	LoadHash(ctx context.Context, id string) []byte
	// SaveHash keeps state as the hash state of an upload; nil forgets
	// it.
	SaveHash(ctx context.Context, id string, state []byte) error

	// The partial uploads of tus concatenation (concat.go). A staging
	// keeps a placed partial (one whose metadata places it, placementOf)
	// where its group's final will take it, and the state of a group
	// under the group's key (groupKey) as an ID: its hash state
	// (LoadHash, SaveHash), its staged file if it has one, all removed by
	// Remove and yielded by Idle with a size of 0.

	// ReadPart returns the bytes of a finished partial from off on, to
	// hash them.
	ReadPart(ctx context.Context, p part, off int64) (io.ReadCloser, error)
	// Seal makes sure the partials' bytes are where Join and ReadPart find
	// them (a partial a crash left unfinished is finished).
	Seal(ctx context.Context, parts []part) error
	// Join makes the partials, in order, the bytes of the final upload
	// final, without their bytes passing through largo: a rename of the
	// group's staged file when whole (they are one group, all of it),
	// else a join by the kernel or the S3 server. A join cut short
	// leaves the final's bytes incomplete.
	Join(ctx context.Context, final string, parts []part, whole bool) error
	// JoinsInPlace reports whether a whole group's join needs no room:
	// its bytes are where the final's will be.
	JoinsInPlace() bool
}

// IdleUpload is an upload that receives no bytes.
type IdleUpload struct {
	// ID is the upload's ID.
	ID string
	// Size is the number of bytes it holds.
	Size int64
	// Last is when it last received a byte (or was created).
	Last time.Time
}

// lastWriter is a Staging that tells when an upload last received a
// byte (or was created), for the lifetime the IETF protocol announces.
type lastWriter interface {
	LastWrite(ctx context.Context, id string) (time.Time, error)
}

// folderStore is a store on a local folder, which lends its os.Root to
// the packages that keep state inside the folder.
type folderStore interface {
	largo.StateKeeper
	Root() *os.Root
}

// bucketStore is a store on a bucket, which shares its S3 client.
type bucketStore interface {
	largo.Store
	Shared() s3.Shared
}

// StagingFor returns the staging in store's own state area: on a folder,
// largo.StateDir/tus through the folder's os.Root; on a bucket, the keys
// under the prefix's largo.StateDir/tus, through the store's own client.
// It is an error wrapping largo.ErrUnsupported for a store that offers
// neither.
func StagingFor(store largo.Store) (Staging, error) {
	switch st := store.(type) {
	case folderStore:
		return DiskStaging(st.Root(), st.State(), largo.StateDir+"/tus")
	case bucketStore:
		sh := st.Shared()
		asm, _ := st.(assembler)
		return S3Staging(S3Config{
			Assembler:       asm,
			Client:          sh.Client,
			Bucket:          sh.Bucket,
			Prefix:          sh.Prefix + largo.StateDir + "/tus",
			Staged:          largo.StateDir + "/tus",
			PartSize:        sh.PartSize,
			PartConcurrency: sh.PartConcurrency,
		})
	}
	return nil, fmt.Errorf("resumable uploads on this store: %w", largo.ErrUnsupported)
}
