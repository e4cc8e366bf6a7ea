package node

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/paddlejob/paddlejob/internal/imageref"
)

// ImageEntry says how a container of an image runs on this machine, since the
// node pulls no images: Command plays the image's ENTRYPOINT and Args its CMD.
// Files and HostPaths give it a file system of its own, as an image has; a
// Context builds all of it from a Dockerfile (see dockerfile.go).
type ImageEntry struct {
	Command    []string          `json:"command,omitempty"`
	Args       []string          `json:"args,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	WorkingDir string            `json:"workingDir,omitempty"`
	// OverrideCommand makes Command and Args replace the container's own
	// command, so manifests written for a real image run a local equivalent.
	OverrideCommand bool `json:"overrideCommand,omitempty"`
	// Files are the image's own files. Each container gets a private,
	// writable copy of them (as a container's writable layer), made in the
	// pod's directory when it starts and removed with the pod; later entries
	// are copied over earlier ones.
	Files []ImageFile `json:"files,omitempty"`
	// HostPaths are host directories the image's programs need, such as a
	// language runtime (a Python venv and its base interpreter's prefix),
	// bound read-only at the same path.
	HostPaths []string `json:"hostPaths,omitempty"`
	// Context is a Docker build context: a directory holding a Dockerfile,
	// interpreted into the entry when the table is loaded. The entry's other
	// fields apply over what the Dockerfile gives (see resolveContexts).
	Context string `json:"context,omitempty"`
	// PaddleRelease makes the entry a PaddlePaddle image that runs on one of
	// the node's Paddle runtimes (the table's paddle section): "tag" takes
	// the release the image's tag names (paddlepaddle/paddle:2.6.2), a
	// version that release. A Dockerfile FROM such an image, or pinning
	// paddlepaddle with pip, gets one too (see paddlerelease.go); with
	// "tag" on an entry with a context, a tag naming a release moves the
	// image built from it onto that release.
	PaddleRelease string `json:"paddleRelease,omitempty"`
	// Paddle is the release the entry runs on, once the node chose it.
	Paddle *PaddleSelection `json:"-"`
}

// ImageFile is a file or directory of an image: Source on the host, copied
// to Path in the container. A directory's content is copied into Path,
// merging with what earlier files put there.
type ImageFile struct {
	Source string `json:"source"`
	Path   string `json:"path"`
	// Ignore leaves out of a directory what its build context's
	// .dockerignore excludes (COPY and ADD set it: dockerignore.go).
	Ignore *contextIgnore `json:"-"`
}

// ImageTableFile is the --image-table file format; the local cluster writes
// it, and adds the user's images to it.
type ImageTableFile struct {
	Images map[string]ImageEntry `json:"images"`
	// Paddle are the node's Paddle runtimes, for the entries with a
	// paddleRelease.
	Paddle *PaddleRuntimes `json:"paddle,omitempty"`
	// BuildContextOutputs are the output/ directories of the build
	// contexts the cluster's owner named (paddlejob run --build-context):
	// pods may mount them read-write, each while it is a directory whose
	// absolute path holds no symlink (hostPathRules.Outputs).
	BuildContextOutputs []string `json:"buildContextOutputs,omitempty"`
}

// builtinImages are known without a table file. busybox is a POSIX shell
// image: its default command is sh, and containers naming a command run it on
// the host, whose shell and tools stand in for busybox's.
func builtinImages() map[string]ImageEntry {
	return map[string]ImageEntry{
		"busybox": {Args: []string{"sh"}},
	}
}

// ImageTable maps image references to ImageEntries. A key is an exact
// "name:tag", a bare "name" matching any tag or digest, or a prefix ending in
// "*"; an exact tag wins over a bare name, which wins over the longest prefix.
type ImageTable struct {
	// file is where the entries came from, for messages; empty without one.
	file string
	// raw are the entries as given, before their contexts were built:
	// what the table is built again from once a Paddle runtime is
	// installed (withInstalledPaddle).
	raw map[string]ImageEntry
	// entries are by normalized key; tagged, anyTag and prefixes index them.
	entries  map[string]ImageEntry
	tagged   map[string]bool // "name:tag"
	anyTag   map[string]bool // "name"
	prefixes []string        // without the "*", longest first
	// warnings are about the entries, for the node to log once: what their
	// Dockerfiles ask and local images cannot do.
	warnings []string
	// paddle are the node's Paddle runtimes (nil without any).
	paddle *PaddleRuntimes
	// outputs are the file's buildContextOutputs.
	outputs []string
	// contexts are its entries' build contexts, by their real paths.
	contexts []string
}

// BuildContexts are the directories the table lets pods read through
// hostPaths: its entries' build contexts (paddlejob init's jobs mount their
// data/).
func (t *ImageTable) BuildContexts() []string {
	if t == nil {
		return nil
	}
	return t.contexts
}

// BuildContextOutputs are the directories the table lets pods write to:
// its build contexts' output/.
func (t *ImageTable) BuildContextOutputs() []string {
	if t == nil {
		return nil
	}
	return t.outputs
}

// LoadImageTable reads the table file at path (none when empty) and merges
// its entries over the built-in ones.
func LoadImageTable(path string) (*ImageTable, error) {
	entries := builtinImages()
	var paddle *PaddleRuntimes
	var outputs []string
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading image table: %w", err)
		}
		file, err := parseImageTable(data)
		if err != nil {
			return nil, fmt.Errorf("image table %s: %w", path, err)
		}
		entries = mergeImageEntries(entries, file.Images)
		paddle = file.Paddle
		for _, o := range file.BuildContextOutputs {
			if !filepath.IsAbs(o) {
				return nil, fmt.Errorf("image table %s: buildContextOutputs: %q is not an absolute path", path, o)
			}
			outputs = append(outputs, filepath.Clean(o))
		}
	}
	t, err := newImageTableWithPaddle(path, entries, paddle)
	if err != nil && path != "" {
		return nil, fmt.Errorf("image table %s: %w", path, err)
	}
	if t != nil {
		t.outputs = outputs
		t.contexts = buildContextDirs(t.entries)
	}
	return t, err
}

// buildContextDirs are the entries' build contexts by their real paths,
// sorted, each once.
func buildContextDirs(entries map[string]ImageEntry) []string {
	var dirs []string
	for _, e := range entries {
		if e.Context == "" {
			continue
		}
		real, err := filepath.EvalSymlinks(e.Context)
		if err != nil || slices.Contains(dirs, real) {
			continue
		}
		dirs = append(dirs, real)
	}
	slices.Sort(dirs)
	return dirs
}

// parseImageTable reads a table file, refusing a field it does not know.
func parseImageTable(data []byte) (ImageTableFile, error) {
	var f ImageTableFile
	err := yaml.UnmarshalStrict(data, &f)
	return f, err
}

// mergeImageEntries returns base with over's entries added or replacing
// entries of the same normalized key.
func mergeImageEntries(base, over map[string]ImageEntry) map[string]ImageEntry {
	merged := make(map[string]ImageEntry, len(base)+len(over))
	for k, v := range base {
		merged[imageref.Familiar(k)] = v
	}
	for k, v := range over {
		merged[imageref.Familiar(k)] = v
	}
	return merged
}

// newImageTable indexes the entries, builds those with a context, and checks
// them all.
func newImageTable(file string, entries map[string]ImageEntry) (*ImageTable, error) {
	return newImageTableWithPaddle(file, entries, nil)
}

// newImageTableWithPaddle is newImageTable with the node's Paddle runtimes.
func newImageTableWithPaddle(file string, entries map[string]ImageEntry, paddle *PaddleRuntimes) (*ImageTable, error) {
	t := &ImageTable{file: file, raw: maps.Clone(entries), entries: map[string]ImageEntry{}, tagged: map[string]bool{}, anyTag: map[string]bool{}, paddle: paddle}
	for key, e := range entries {
		key = imageref.Familiar(key)
		t.entries[key] = e
		switch {
		case strings.HasSuffix(key, "*"):
			t.prefixes = append(t.prefixes, strings.TrimSuffix(key, "*"))
		case imageref.HasTag(key):
			t.tagged[key] = true
		default:
			t.anyTag[key] = true
		}
	}
	sort.Slice(t.prefixes, func(i, j int) bool {
		if len(t.prefixes[i]) != len(t.prefixes[j]) {
			return len(t.prefixes[i]) > len(t.prefixes[j])
		}
		return t.prefixes[i] < t.prefixes[j]
	})
	errs := []error{t.resolveContexts()}
	for _, key := range sortedEntryKeys(t.entries) {
		if err := checkImageEntry(t.entries[key]); err != nil {
			errs = append(errs, fmt.Errorf("image %q: %w", key, err))
		}
	}
	return t, errors.Join(errs...)
}

// checkImageEntry checks an entry once its context is built.
func checkImageEntry(e ImageEntry) error {
	var errs []error
	if e.OverrideCommand && len(e.Command) == 0 {
		errs = append(errs, errors.New("overrideCommand needs a command"))
	}
	for _, f := range e.Files {
		if !filepath.IsAbs(f.Source) {
			errs = append(errs, fmt.Errorf("files: source %q must be an absolute path", f.Source))
		}
		if err := checkImagePath(f.Path); err != nil {
			errs = append(errs, fmt.Errorf("files: %w", err))
		}
	}
	for _, p := range e.HostPaths {
		if !path.IsAbs(p) || path.Clean(p) == "/" {
			errs = append(errs, fmt.Errorf("hostPaths: %q must be an absolute path other than /", p))
		}
	}
	if r := e.PaddleRelease; r != "" && r != paddleReleaseByTag && !releaseInTag.MatchString(r) {
		errs = append(errs, fmt.Errorf("paddleRelease %q: want %q or a release such as 3.0.0", r, paddleReleaseByTag))
	}
	return errors.Join(errs...)
}

// checkImagePath checks where an image file goes in the sandbox: an absolute
// path outside the sandbox's own /proc and /dev.
func checkImagePath(p string) error {
	if !path.IsAbs(p) {
		return fmt.Errorf("path %q must be absolute", p)
	}
	if p = path.Clean(p); isUnder(p, "/proc") || isUnder(p, "/dev") {
		return fmt.Errorf("path %s: /proc and /dev are the sandbox's own", p)
	}
	return nil
}

// Warnings are what the entries ask that the node does not do, such as the
// RUN instructions of their Dockerfiles; the node logs them at start.
func (t *ImageTable) Warnings() []string { return t.warnings }

// lookupKey finds the key of the entry for an image reference.
func (t *ImageTable) lookupKey(image string) (string, bool) {
	ref := imageref.Familiar(image)
	name, tag := imageref.NameAndTag(image)
	if t.tagged[name+":"+tag] {
		return name + ":" + tag, true
	}
	if t.anyTag[name] {
		return name, true
	}
	for _, p := range t.prefixes {
		if strings.HasPrefix(ref, p) {
			return p + "*", true
		}
	}
	return "", false
}

// Lookup finds the entry for an image reference; a Paddle image's entry
// runs on the release the reference selects.
func (t *ImageTable) Lookup(image string) (ImageEntry, bool) {
	key, ok := t.lookupKey(image)
	if !ok {
		return ImageEntry{}, false
	}
	return t.resolvePaddle(image, t.entries[key]), true
}

// resolvePaddle applies the Paddle release an image reference selects to
// its entry, unless the entry has one already.
func (t *ImageTable) resolvePaddle(image string, e ImageEntry) ImageEntry {
	switch {
	case e.PaddleRelease == "":
		return e
	case e.PaddleRelease != paddleReleaseByTag:
		return t.withPaddle(e, e.PaddleRelease)
	case e.Paddle == nil:
		return t.withPaddle(e, paddleReleaseOfTag(image))
	}
	// Built from a Dockerfile: a tag naming a release puts the same image
	// on that one (demo-resnet:3.3.1), another keeps the Dockerfile's.
	if asked := paddleReleaseOfTag(image); asked != "" {
		return t.repinPaddle(e, asked)
	}
	e.PaddleRelease = ""
	return e
}

// unknownImageMessage tells the user how to make an image runnable.
func (t *ImageTable) unknownImageMessage(image string) string {
	name, _ := imageref.NameAndTag(image)
	where := "no --image-table file was given to the node; pass one"
	if t.file != "" {
		where = "add it to the node's image table " + t.file + " (then restart the node)"
	}
	return fmt.Sprintf("image %q is not in the node's image table and the container has no command: %s, e.g.\n"+
		"images:\n  %s:\n    command: [\"/absolute/path/to/program\"]\n"+
		"(a key without a tag matches every tag; a trailing * matches a prefix)", image, where, name)
}

// containerArgv is the command line a container runs: its own command and
// args, unless it has no command (the image's command, with the container's
// args when it has some, else the image's) or the image entry overrides it.
func containerArgv(c *corev1.Container, entry ImageEntry, known bool) ([]string, error) {
	var argv []string
	switch {
	case known && entry.OverrideCommand:
		argv = append(append(argv, entry.Command...), entry.Args...)
	case len(c.Command) > 0:
		argv = append(append(argv, c.Command...), c.Args...)
	case len(c.Args) > 0:
		argv = append(append(argv, entry.Command...), c.Args...)
	default:
		argv = append(append(argv, entry.Command...), entry.Args...)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("no command to run for image %q: neither the container nor the image table gives one", c.Image)
	}
	return argv, nil
}

func sortedEntryKeys(m map[string]ImageEntry) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
