package client

import "github.com/paddlejob/paddlejob/internal/imageref"

// ValidateImage says what is wrong with an image reference, or returns nil.
// The API server stores any string without surrounding whitespace, so a bad
// reference is only noticed when a kubelet fails to pull it
// (InvalidImageName): checking it before submitting, as the kubelet reads
// it, says why at once.
func ValidateImage(ref string) error { return imageref.Validate(ref) }
