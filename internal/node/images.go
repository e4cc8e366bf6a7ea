package node

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// ImageEntry says how a container of an image runs on this machine, since the
// node pulls no images: Command plays the image's ENTRYPOINT and Args its CMD.
type ImageEntry struct {
	Command    []string          `json:"command,omitempty"`
	Args       []string          `json:"args,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	WorkingDir string            `json:"workingDir,omitempty"`
	// OverrideCommand makes Command and Args replace the container's own
	// command, so manifests written for a real image run a local equivalent.
	OverrideCommand bool `json:"overrideCommand,omitempty"`
}

// imageTableFile is the --image-table file format.
type imageTableFile struct {
	Images map[string]ImageEntry `json:"images"`
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
	file     string
	tagged   map[string]ImageEntry // "name:tag"
	anyTag   map[string]ImageEntry // "name"
	prefixes []imagePrefix         // longest first
}

type imagePrefix struct {
	prefix string
	entry  ImageEntry
}

// LoadImageTable reads the table file at path (none when empty) and merges
// its entries over the built-in ones.
func LoadImageTable(path string) (*ImageTable, error) {
	entries := builtinImages()
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading image table: %w", err)
		}
		file, err := parseImageTable(data)
		if err != nil {
			return nil, fmt.Errorf("image table %s: %w", path, err)
		}
		entries = mergeImageEntries(entries, file)
	}
	return newImageTable(path, entries)
}

func parseImageTable(data []byte) (map[string]ImageEntry, error) {
	var f imageTableFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, err
	}
	return f.Images, nil
}

// mergeImageEntries returns base with over's entries added or replacing
// entries of the same normalized key.
func mergeImageEntries(base, over map[string]ImageEntry) map[string]ImageEntry {
	merged := make(map[string]ImageEntry, len(base)+len(over))
	for k, v := range base {
		merged[normalizeImage(k)] = v
	}
	for k, v := range over {
		merged[normalizeImage(k)] = v
	}
	return merged
}

func newImageTable(file string, entries map[string]ImageEntry) (*ImageTable, error) {
	t := &ImageTable{file: file, tagged: map[string]ImageEntry{}, anyTag: map[string]ImageEntry{}}
	var errs []error
	for key, e := range entries {
		if e.OverrideCommand && len(e.Command) == 0 {
			errs = append(errs, fmt.Errorf("image %q: overrideCommand needs a command", key))
		}
		key = normalizeImage(key)
		switch {
		case strings.HasSuffix(key, "*"):
			t.prefixes = append(t.prefixes, imagePrefix{prefix: strings.TrimSuffix(key, "*"), entry: e})
		case hasTag(key):
			t.tagged[key] = e
		default:
			t.anyTag[key] = e
		}
	}
	sort.Slice(t.prefixes, func(i, j int) bool {
		if len(t.prefixes[i].prefix) != len(t.prefixes[j].prefix) {
			return len(t.prefixes[i].prefix) > len(t.prefixes[j].prefix)
		}
		return t.prefixes[i].prefix < t.prefixes[j].prefix
	})
	return t, errors.Join(errs...)
}

// Lookup finds the entry for an image reference.
func (t *ImageTable) Lookup(image string) (ImageEntry, bool) {
	ref := normalizeImage(image)
	name, tag := splitImage(ref)
	if e, ok := t.tagged[name+":"+tag]; ok {
		return e, true
	}
	if e, ok := t.anyTag[name]; ok {
		return e, true
	}
	for _, p := range t.prefixes {
		if strings.HasPrefix(ref, p.prefix) {
			return p.entry, true
		}
	}
	return ImageEntry{}, false
}

// unknownImageMessage tells the user how to make an image runnable.
func (t *ImageTable) unknownImageMessage(image string) string {
	name, _ := splitImage(normalizeImage(image))
	where := "no --image-table file was given to the node; pass one"
	if t.file != "" {
		where = "add it to the node's image table " + t.file + " (then restart the node)"
	}
	return fmt.Sprintf("image %q is not in the node's image table and the container has no command: %s, e.g.\n"+
		"images:\n  %s:\n    command: [\"/absolute/path/to/program\"]\n"+
		"(a key without a tag matches every tag; a trailing * matches a prefix)", image, where, name)
}

// normalizeImage drops the Docker Hub registry and library/ prefixes so
// "docker.io/library/busybox" and "busybox" are one image.
func normalizeImage(ref string) string {
	ref = strings.TrimSpace(ref)
	for _, p := range []string{"index.docker.io/", "docker.io/"} {
		if strings.HasPrefix(ref, p) {
			ref = strings.TrimPrefix(strings.TrimPrefix(ref, p), "library/")
			break
		}
	}
	return ref
}

// splitImage splits a reference into its name and tag ("latest" when absent);
// a digest counts as the tag.
func splitImage(ref string) (name, tag string) {
	if at := strings.Index(ref, "@"); at >= 0 {
		return ref[:at], ref[at+1:]
	}
	if hasTag(ref) {
		i := strings.LastIndex(ref, ":")
		return ref[:i], ref[i+1:]
	}
	return ref, "latest"
}

// hasTag reports whether ref ends in ":tag"; a colon before the last slash
// belongs to a registry port.
func hasTag(ref string) bool {
	colon := strings.LastIndex(ref, ":")
	return colon > strings.LastIndex(ref, "/")
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

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
