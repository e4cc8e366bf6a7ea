package client

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// An image reference, as a container runtime parses it:
//
//	[registry[:port]/]component[/component...][:tag][@algorithm:hex]
//
// A registry is the first component when it has a dot or a port, or is
// localhost. Components are lowercase letters and digits, joined by ".",
// "_", "__" or dashes. The API server takes any string without surrounding
// whitespace, so a bad reference is only noticed when a kubelet fails to
// pull it (InvalidImageName): checking it before submitting says why at once.
var (
	imageComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$`)
	imageRegistry  = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?$`)
	imageTag       = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	imageDigest    = regexp.MustCompile(`^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-fA-F0-9]{32,}$`)
)

// maxImageNameLength bounds the repository name (registry and path).
const maxImageNameLength = 255

// ValidateImage says what is wrong with an image reference, or returns nil.
func ValidateImage(ref string) error {
	if ref == "" {
		return errors.New("the image is required")
	}
	if strings.TrimSpace(ref) != ref || strings.ContainsAny(ref, " \t\n\r") {
		return errors.New("an image reference has no spaces, e.g. registry.example.com/team/trainer:v1")
	}
	name, digest, hasDigest := strings.Cut(ref, "@")
	if hasDigest && !imageDigest.MatchString(digest) {
		return fmt.Errorf("digest %q: want ALGORITHM:HEX, e.g. sha256:<64 hex digits>", digest)
	}
	// A colon after the last slash starts the tag; one before it is a port.
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		tag := name[i+1:]
		name = name[:i]
		if !imageTag.MatchString(tag) {
			return fmt.Errorf("tag %q: up to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'", tag)
		}
	}
	if name == "" {
		return errors.New("the repository name is missing")
	}
	if len(name) > maxImageNameLength {
		return fmt.Errorf("the repository name has %d characters; at most %d", len(name), maxImageNameLength)
	}
	parts := strings.Split(name, "/")
	if first := parts[0]; len(parts) > 1 && (strings.ContainsAny(first, ".:") || first == "localhost" || first != strings.ToLower(first)) {
		if !imageRegistry.MatchString(first) {
			return fmt.Errorf("registry %q: want a host name, optionally with a port (registry.example.com:5000)", first)
		}
		parts = parts[1:]
	}
	for _, p := range parts {
		if !imageComponent.MatchString(p) {
			if p != strings.ToLower(p) {
				return fmt.Errorf("%q: repository names are lowercase", p)
			}
			return fmt.Errorf("%q: a repository name's parts are lowercase letters and digits, joined by '.', '_' or '-'", p)
		}
	}
	return nil
}
