package imagecontext

import (
	"fmt"

	"github.com/distribution/reference"

	"github.com/paddlejob/paddlejob/internal/imageref"
)

// validateReference checks an image reference given to flag, as the
// kubelet reads it (internal/imageref); a digest is accepted only when
// allowDigest (a base image may be pinned; an image to build cannot be).
func validateReference(flag, ref string, allowDigest bool) error {
	if ref == "" {
		return fmt.Errorf("--%s is required", flag)
	}
	named, err := imageref.Parse(ref)
	if err != nil {
		return fmt.Errorf("--%s=%q: %w", flag, ref, err)
	}
	if _, digested := named.(reference.Digested); digested && !allowDigest {
		return fmt.Errorf("--%s=%q: an image to build takes a tag, not a digest", flag, ref)
	}
	return nil
}
