package paddleruntime

import (
	"context"
	"fmt"
	"regexp"
)

// envName is the name of a pinned environment: a directory of the cache.
var envName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// EnsureEnv returns a pinned Python virtual environment other than the Paddle
// runtime, such as the Python SDK's test environment: requirements is a
// requirements file in the Paddle runtime's format (every package pinned
// exactly, dependencies included, and a `# python: 3.X-3.Y` line). It is
// installed, cached under opts.CacheDir/<name>/ keyed by the requirements'
// hash and the interpreter, locked and reused exactly like the Paddle
// runtime; opts.Dir is ignored.
func EnsureEnv(ctx context.Context, opts Options, name string, requirements []byte) (*Runtime, error) {
	if !envName.MatchString(name) || name == "paddle-runtime" {
		return nil, fmt.Errorf("environment name %q: want lowercase letters, digits and '-', starting with a letter, other than paddle-runtime", name)
	}
	p, err := parseRequirements(requirements)
	if err != nil {
		return nil, fmt.Errorf("the requirements of %s: %w", name, err)
	}
	p.env = name
	return ensure(ctx, opts, p)
}
