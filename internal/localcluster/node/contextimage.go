package node

import (
	"fmt"
)

// BuildContextImage reads the Dockerfile of a build context as this node
// does for its own images, for a node that runs real images (the
// container-runtime node): base gives the FROM image's defaults, the files
// the COPY and ADD lines add are copied into root, and the returned entry
// holds the image's command (ENTRYPOINT), args (CMD), environment and
// working directory. The warnings are what the Dockerfile asks that cannot
// be done (a RUN line).
func BuildContextImage(context, root string, base func(ref string) (ImageEntry, bool, error)) (ImageEntry, []string, error) {
	e, warnings, err := buildContext(context, base)
	if err != nil {
		return ImageEntry{}, nil, err
	}
	for _, f := range e.Files {
		if err := copyImageFile(root, f); err != nil {
			return ImageEntry{}, nil, fmt.Errorf("context %s: %w", context, err)
		}
	}
	return e, warnings, nil
}
