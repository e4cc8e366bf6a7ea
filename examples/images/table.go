package images

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// TableFile is the file beside the contexts that names their images.
const TableFile = "images.yaml"

// Table is images.yaml: which image names the local node answers with the
// Paddle runtime, and which with each build context.
type Table struct {
	// PaddleImages are PaddlePaddle itself: the runtime of the release
	// their tag names.
	PaddleImages []string `json:"paddleImages"`
	// Contexts are by directory name.
	Contexts map[string]Context `json:"contexts"`
}

// Context is what one build context answers to and needs from the node.
type Context struct {
	// Images are names with a tag (that tag only) or without (every tag).
	Images []string `json:"images"`
	// PythonSDK: the context's programs import the Python SDK, which the
	// node writes into the context as paddlejob/.
	PythonSDK bool `json:"pythonSDK,omitempty"`
	// Launcher: the context's programs run the in-pod launcher, which the
	// node puts first on PATH.
	Launcher bool `json:"launcher,omitempty"`
}

// LoadTable reads images.yaml and checks it against the contexts: every
// context it names is a directory with a Dockerfile, every directory is
// named, and no image name is given twice.
func LoadTable() (*Table, error) {
	return loadTable(files)
}

func loadTable(contexts fs.FS) (*Table, error) {
	data, err := fs.ReadFile(contexts, TableFile)
	if err != nil {
		return nil, err
	}
	var t Table
	if err := yaml.UnmarshalStrict(data, &t); err != nil {
		return nil, fmt.Errorf("examples/images/%s: %w", TableFile, err)
	}
	if err := t.check(contexts); err != nil {
		return nil, fmt.Errorf("examples/images/%s: %w", TableFile, err)
	}
	return &t, nil
}

// check returns every problem of the table at once.
func (t *Table) check(contexts fs.FS) error {
	var errs []error
	owner := map[string]string{}
	claim := func(image, by string) {
		switch {
		case strings.TrimSpace(image) == "" || strings.ContainsAny(image, " \t*"):
			errs = append(errs, fmt.Errorf("%s: image name %q: want a name, with or without a tag", by, image))
		case owner[image] != "":
			errs = append(errs, fmt.Errorf("%s: image %q is %s's already", by, image, owner[image]))
		default:
			owner[image] = by
		}
	}
	for _, image := range t.PaddleImages {
		claim(image, "paddleImages")
	}
	for _, name := range t.ContextNames() {
		by := "contexts." + name
		if len(t.Contexts[name].Images) == 0 {
			errs = append(errs, fmt.Errorf("%s: images: name at least one", by))
		}
		for _, image := range t.Contexts[name].Images {
			claim(image, by)
		}
		if _, err := fs.Stat(contexts, name+"/Dockerfile"); err != nil {
			errs = append(errs, fmt.Errorf("%s: no build context examples/images/%s with a Dockerfile", by, name))
		}
	}
	dirs, err := fs.ReadDir(contexts, ".")
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if _, named := t.Contexts[d.Name()]; d.IsDir() && !named {
			errs = append(errs, fmt.Errorf("contexts: the build context examples/images/%s is not named: add it with the images it answers to", d.Name()))
		}
	}
	return errors.Join(errs...)
}

// ContextNames are the contexts' directory names, sorted.
func (t *Table) ContextNames() []string {
	names := make([]string, 0, len(t.Contexts))
	for name := range t.Contexts {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
