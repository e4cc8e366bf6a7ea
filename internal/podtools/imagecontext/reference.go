package imagecontext

import (
	"fmt"
	"regexp"
	"strings"
)

// The image reference grammar of the Docker distribution project, written
// out: [domain[:port]/]path[/path...][:tag][@digest].
var (
	pathComponent   = `[a-z0-9]+(?:(?:[_.]|__|-+)[a-z0-9]+)*`
	domainComponent = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	domain          = `(?:` + domainComponent + `(?:\.` + domainComponent + `)*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?`
	name            = `(?:` + domain + `/)?` + pathComponent + `(?:/` + pathComponent + `)*`
	tag             = `[\w][\w.-]{0,127}`
	digest          = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`

	referenceRegexp = regexp.MustCompile(`^(` + name + `)(?::(` + tag + `))?(?:@(` + digest + `))?$`)
)

// maxNameLength is the longest repository name a registry accepts.
const maxNameLength = 255

// validateReference checks an image reference given to flag; a digest is
// accepted only when allowDigest (a base image may be pinned; an image to
// build cannot be).
func validateReference(flag, ref string, allowDigest bool) error {
	if ref == "" {
		return fmt.Errorf("--%s is required", flag)
	}
	m := referenceRegexp.FindStringSubmatch(ref)
	if m == nil || uppercaseRepository(m[1]) {
		hint := ""
		if strings.ToLower(ref) != ref {
			hint = " (repository names are lowercase)"
		}
		return fmt.Errorf("--%s=%q is not an image reference [registry/]name[:tag]%s", flag, ref, hint)
	}
	if len(m[1]) > maxNameLength {
		return fmt.Errorf("--%s=%q: the repository name is longer than %d characters", flag, ref, maxNameLength)
	}
	if m[3] != "" && !allowDigest {
		return fmt.Errorf("--%s=%q: an image to build takes a tag, not a digest", flag, ref)
	}
	return nil
}

// uppercaseRepository catches "User/repo": the grammar would read "User" as
// a registry host, but a host has a dot or a port, or is localhost, so this
// is a repository name that is not lowercase.
func uppercaseRepository(name string) bool {
	first, _, hasSlash := strings.Cut(name, "/")
	return hasSlash && first != "localhost" && !strings.ContainsAny(first, ".:") && strings.ToLower(first) != first
}
