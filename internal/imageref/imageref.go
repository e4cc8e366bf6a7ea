// Package imageref reads container image references as the kubelet and the
// container runtimes read them (github.com/distribution/reference: a bad
// one is a pod's InvalidImageName), says what is wrong with one in words
// naming the part to change, and gives the familiar form the local node's
// image table is keyed by.
package imageref

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
)

// Parse reads ref as a kubelet does, Docker Hub's registry and library/
// filled in ("busybox" is docker.io/library/busybox), or says what is
// wrong with it. One thing it refuses that the kubelet takes: a first part
// with capitals but no dot or port ("Team/trainer"), which distribution
// reads as a registry's host name but is, every time seen, a repository
// name that is not lowercase.
func Parse(ref string) (reference.Named, error) {
	if ref == "" {
		return nil, errors.New("the image is required")
	}
	if strings.TrimSpace(ref) != ref || strings.ContainsAny(ref, " \t\n\r") {
		return nil, errors.New("an image reference has no spaces, e.g. registry.example.com/team/trainer:v1")
	}
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return nil, explain(ref, err)
	}
	if d := reference.Domain(named); d != "" && d != "localhost" && !strings.ContainsAny(d, ".:") {
		return nil, fmt.Errorf("%q: repository names are lowercase (a registry's host name has a dot or a port, or is localhost)", d)
	}
	return named, nil
}

// Validate says what is wrong with ref, or returns nil.
func Validate(ref string) error {
	_, err := Parse(ref)
	return err
}

var (
	anchoredTag    = anchored(reference.TagRegexp)
	anchoredDigest = anchored(reference.DigestRegexp)
	anchoredDomain = anchored(reference.DomainRegexp)
	anchoredName   = anchored(reference.NameRegexp)
)

func anchored(re *regexp.Regexp) *regexp.Regexp {
	return regexp.MustCompile(`^(?:` + re.String() + `)$`)
}

// explain turns distribution's error into one naming the part of ref to
// change, checked with distribution's own expressions for each part.
func explain(ref string, err error) error {
	if errors.Is(err, reference.ErrNameTooLong) {
		return fmt.Errorf("the repository name is too long: at most %d characters", reference.RepositoryNameTotalLengthMax)
	}
	name, dgst, hasDigest := strings.Cut(ref, "@")
	if hasDigest {
		if _, derr := digest.Parse(dgst); derr != nil || !anchoredDigest.MatchString(dgst) {
			return fmt.Errorf("digest %q: want ALGORITHM:HEX, e.g. sha256:<64 lowercase hex digits>", dgst)
		}
	}
	// A colon after the last slash starts the tag; one before it is a port.
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		tag := name[i+1:]
		name = name[:i]
		if !anchoredTag.MatchString(tag) {
			return fmt.Errorf("tag %q: up to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'", tag)
		}
	}
	if name == "" {
		return errors.New("the repository name is missing")
	}
	parts := strings.Split(name, "/")
	if first := parts[0]; len(parts) > 1 && (strings.ContainsAny(first, ".:") || first == "localhost") {
		if !anchoredDomain.MatchString(first) {
			return fmt.Errorf("registry %q: want a host name, optionally with a port (registry.example.com:5000)", first)
		}
		parts = parts[1:]
	}
	for _, p := range parts {
		if p != strings.ToLower(p) {
			return fmt.Errorf("%q: repository names are lowercase", p)
		}
		if !anchoredName.MatchString(p) {
			return fmt.Errorf("%q: a repository name's parts are lowercase letters and digits, joined by '.', '_' or '-'", p)
		}
	}
	return fmt.Errorf("%q is not an image reference [registry/]name[:tag][@digest]: %w", ref, err)
}

// Full is ref as container runtimes store it: registry, repository and
// tag ("busybox" is docker.io/library/busybox:latest).
func Full(ref string) (string, error) {
	named, err := Parse(ref)
	if err != nil {
		return "", err
	}
	return reference.TagNameOnly(named).String(), nil
}

// Familiar is ref as users write it: Docker Hub's registry and library/
// dropped ("docker.io/library/busybox:1.36" is "busybox:1.36"). A string
// that is no reference (an image table key's "name*" pattern) keeps its
// text, with the same prefixes dropped.
func Familiar(ref string) string {
	ref = strings.TrimSpace(ref)
	if named, err := reference.ParseNormalizedNamed(ref); err == nil {
		return reference.FamiliarString(named)
	}
	for _, p := range []string{"index.docker.io/", "docker.io/"} {
		if rest, ok := strings.CutPrefix(ref, p); ok {
			return strings.TrimPrefix(rest, "library/")
		}
	}
	return ref
}

// NameAndTag are ref's familiar name and its tag: "latest" when it names
// none, its digest when it has one. A string that is no reference is split
// at its @, else at its last colon after its last slash.
func NameAndTag(ref string) (name, tag string) {
	name, tag, _ = split(ref)
	return name, tag
}

// HasTag reports whether ref names a tag or a digest.
func HasTag(ref string) bool {
	_, _, tagged := split(ref)
	return tagged
}

// split is ref's familiar name, its tag (or digest, or "latest") and
// whether ref names one.
func split(ref string) (name, tag string, tagged bool) {
	named, err := reference.ParseNormalizedNamed(strings.TrimSpace(ref))
	if err != nil {
		familiar := Familiar(ref)
		if at := strings.Index(familiar, "@"); at >= 0 {
			return familiar[:at], familiar[at+1:], true
		}
		if i := strings.LastIndex(familiar, ":"); i > strings.LastIndex(familiar, "/") {
			return familiar[:i], familiar[i+1:], true
		}
		return familiar, "latest", false
	}
	name, tag = reference.FamiliarName(named), "latest"
	if t, ok := named.(reference.Tagged); ok {
		tag, tagged = t.Tag(), true
	}
	if d, ok := named.(reference.Digested); ok {
		tag, tagged = d.Digest().String(), true
	}
	return name, tag, tagged
}
