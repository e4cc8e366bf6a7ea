package paddleruntime

import (
	"context"
	"embed"
	"fmt"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// The local node runs each image on the Paddle release it asks for: one
// runtime per pinned release, each pinned in pins/paddle-<version>.txt with
// the hashes of its wheels. DefaultRelease serves images that name none.

// DefaultRelease is the release an image naming none runs on.
const DefaultRelease = "3.0.0"

//go:embed pins/*.txt
var pinFiles embed.FS

// Release is a pinned Paddle release.
type Release struct {
	// Version is paddlepaddle's version, such as 2.6.2.
	Version string
	// ParameterServer reports whether its CPU wheel carries the
	// parameter-server runtime: parameter-server and heter jobs need it.
	ParameterServer bool
	// Default: images that name no release run on it.
	Default bool
}

// releasePins are the pin sets of pins/, oldest first.
var releasePins = mustParseReleases()

func mustReadPins(name string) []byte {
	b, err := pinFiles.ReadFile(path.Join("pins", name))
	if err != nil {
		panic(err)
	}
	return b
}

func mustParseReleases() []pinSet {
	entries, err := pinFiles.ReadDir("pins")
	if err != nil {
		panic(err)
	}
	var sets []pinSet
	for _, e := range entries {
		p, err := parsePins(mustReadPins(e.Name()))
		if err != nil {
			panic(fmt.Sprintf("pins/%s: %v", e.Name(), err))
		}
		if want := "paddle-" + p.paddle + ".txt"; e.Name() != want {
			panic(fmt.Sprintf("pins/%s pins paddlepaddle %s: name it %s", e.Name(), p.paddle, want))
		}
		sets = append(sets, p)
	}
	slices.SortFunc(sets, func(a, b pinSet) int { return CompareVersions(a.paddle, b.paddle) })
	return sets
}

// Releases are the pinned releases, oldest first.
func Releases() []Release {
	var out []Release
	for _, p := range releasePins {
		out = append(out, Release{Version: p.paddle, ParameterServer: p.parameterServer, Default: p.paddle == DefaultRelease})
	}
	return out
}

// ParameterServerReleases are the pinned releases whose wheels carry the
// parameter-server runtime, for messages: "2.6.2, 3.0.0".
func ParameterServerReleases() []string {
	var out []string
	for _, r := range Releases() {
		if r.ParameterServer {
			out = append(out, r.Version)
		}
	}
	return out
}

// pinsOf is the pin set of a pinned release (the default's as tests swap it).
func pinsOf(version string) (pinSet, error) {
	if version == DefaultRelease || version == pins.paddle {
		return pins, nil
	}
	for _, p := range releasePins {
		if p.paddle == version {
			return p, nil
		}
	}
	var pinned []string
	for _, r := range Releases() {
		pinned = append(pinned, r.Version)
	}
	return pinSet{}, fmt.Errorf("paddlepaddle %s is not pinned: the pinned releases are %s", version, strings.Join(pinned, ", "))
}

// EnsureRelease returns the cached runtime of a pinned release, installing
// it first when missing, as Ensure does for the default. opts.Dir is
// ignored: a named runtime is one release.
func EnsureRelease(ctx context.Context, opts Options, version string) (*Runtime, error) {
	p, err := pinsOf(version)
	if err != nil {
		return nil, err
	}
	return ensure(ctx, opts, p)
}

// Cached returns the cached runtime of a pinned release without installing
// it: nil when it is not installed (the local node installs it when a pod
// first needs it). An error says the interpreter cannot serve the pins.
func Cached(ctx context.Context, opts Options, version string) (*Runtime, error) {
	p, err := pinsOf(version)
	if err != nil {
		return nil, err
	}
	at, err := locate(ctx, opts, p)
	if err != nil {
		return nil, err
	}
	rt, err := Load(at.link())
	if err != nil {
		return nil, nil //nolint:nilerr // not installed, or broken: an install replaces it
	}
	return rt, nil
}

// EnsureAll returns the runtime of every pinned release by version,
// installing the missing ones one after another (a minute or two each the
// first time). A runtime named by opts.Dir is the only one: it serves every
// image, whatever release it asks for.
func EnsureAll(ctx context.Context, opts Options) (map[string]*Runtime, error) {
	if opts.Dir != "" {
		rt, err := useNamed(ctx, opts.Dir)
		if err != nil {
			return nil, err
		}
		return map[string]*Runtime{rt.PaddleVersion: rt}, nil
	}
	out := map[string]*Runtime{}
	for _, r := range Releases() {
		rt, err := EnsureRelease(ctx, opts, r.Version)
		if err != nil {
			return nil, err
		}
		out[r.Version] = rt
	}
	return out, nil
}

// CompareVersions orders release versions ("2.6.2" < "3.0.0" < "3.10.0",
// "3.0" = "3.0.0") as apimachinery's generic versions do; a version it
// cannot read sorts before every other.
func CompareVersions(a, b string) int {
	va, errA := version.ParseGeneric(a)
	if errA != nil {
		if _, errB := version.ParseGeneric(b); errB != nil {
			return strings.Compare(a, b)
		}
		return -1
	}
	c, err := va.Compare(b)
	if err != nil {
		return 1
	}
	return c
}

// Requirements is a pinned release's requirements file, every package
// pinned with the hashes of its wheels: what an image of the release
// installs (pip install --no-deps --require-hashes -r).
func Requirements(version string) ([]byte, error) {
	p, err := pinsOf(version)
	if err != nil {
		return nil, err
	}
	return p.raw, nil
}
