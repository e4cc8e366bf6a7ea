package imagecontext

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/paddlejob/paddlejob/internal/shellwords"
)

// dockerfileMarker starts every Dockerfile this package writes, so that a
// context it wrote before can be told from a directory it must not replace.
const dockerfileMarker = "# Written by `paddlejob image context`."

// packageDir is where the trainer package lies inside the context.
const packageDir = "package"

// dockerfile renders the Dockerfile: the package copied to dest on top of
// base, dest as working directory, and the entrypoint in exec form (split
// like launch's commands, so signals reach the trainer, not a shell).
func dockerfile(base, image, dest, entrypoint string) (string, error) {
	dest = path.Clean(dest)
	var b strings.Builder
	fmt.Fprintln(&b, dockerfileMarker)
	fmt.Fprintf(&b, "# Build: docker build -t %s <this directory>\n", image)
	fmt.Fprintf(&b, "FROM %s\n", base)
	fmt.Fprintf(&b, "COPY %s/ %s\n", packageDir, strings.TrimSuffix(dest, "/")+"/")
	fmt.Fprintf(&b, "WORKDIR %s\n", dest)
	if entrypoint != "" {
		argv, err := shellwords.Split(entrypoint)
		if err == nil && len(argv) == 0 {
			err = errors.New("the entry point is empty")
		}
		if err != nil {
			return "", fmt.Errorf("--entrypoint: %w", err)
		}
		quoted := make([]string, len(argv))
		for i, arg := range argv {
			quoted[i] = jsonString(arg)
		}
		fmt.Fprintf(&b, "ENTRYPOINT [%s]\n", strings.Join(quoted, ", "))
	}
	return b.String(), nil
}

// jsonString quotes s as a JSON string, leaving <, > and & as they are.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
