package ingest

import (
	"errors"
	"fmt"
	"net/http"

	"largo"
	"largo/transfer"
)

// BodyErr classifies an error met reading a request body: the errors of
// the pipeline's own checks pass as they are, a stalled client is
// largo.ErrBodyTimeout, anything else largo.ErrBodyIncomplete.
func BodyErr(err error) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe), errors.Is(err, largo.ErrTooLarge), errors.Is(err, largo.ErrNoSpace),
		errors.Is(err, largo.ErrBodyTimeout), errors.Is(err, largo.ErrBodyIncomplete):
		return err
	case transfer.Classify(err) == transfer.Timeout:
		return fmt.Errorf("%w: %w", largo.ErrBodyTimeout, err)
	}
	return fmt.Errorf("%w: %w", largo.ErrBodyIncomplete, err)
}
