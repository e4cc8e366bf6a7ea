package node

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// resolveContexts builds the entries that have a context, each over the
// entry of its FROM image (built first when it has a context of its own),
// with the entry's own fields applied over the Dockerfile's.
func (t *ImageTable) resolveContexts() error {
	const (
		building = 1
		built    = 2
	)
	state := map[string]int{}
	var errs []error
	var resolve func(key string) error
	resolve = func(key string) error {
		switch state[key] {
		case built:
			return nil
		case building:
			return fmt.Errorf("image %q: its FROM images lead back to it", key)
		}
		e := t.entries[key]
		if e.Context == "" {
			state[key] = built
			return nil
		}
		state[key] = building
		defer func() { state[key] = built }()
		base := func(ref string) (ImageEntry, bool, error) {
			baseKey, ok := t.lookupKey(ref)
			if !ok {
				return ImageEntry{}, false, nil
			}
			if baseKey == key {
				return ImageEntry{}, false, fmt.Errorf("the image table's entry for it is %q, this image's own", key)
			}
			if err := resolve(baseKey); err != nil {
				return ImageEntry{}, false, err
			}
			return t.resolvePaddle(ref, t.entries[baseKey]), true, nil
		}
		fromContext, warnings, err := buildContext(e.Context, base)
		if err != nil {
			return fmt.Errorf("image %q: %w", key, err)
		}
		for _, w := range warnings {
			t.warnings = append(t.warnings, fmt.Sprintf("image %q: %s", key, w))
		}
		// A RUN pinning paddlepaddle with pip, or the table's own
		// paddleRelease, puts the image on that release.
		if e.PaddleRelease != "" && e.PaddleRelease != paddleReleaseByTag {
			fromContext.PaddleRelease = e.PaddleRelease
		}
		if pinned := fromContext.PaddleRelease; pinned != "" {
			fromContext = t.repinPaddle(fromContext, pinned)
		}
		built := overlayEntry(fromContext, e)
		if e.PaddleRelease == paddleReleaseByTag && built.Paddle != nil {
			built.PaddleRelease = paddleReleaseByTag // Lookup applies a tag naming a release
		}
		t.entries[key] = built
		return nil
	}
	for _, key := range sortedEntryKeys(t.entries) {
		if err := resolve(key); err != nil && !slices.ContainsFunc(errs, func(e error) bool { return e.Error() == err.Error() }) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// overlayEntry applies the fields an entry of the table sets over the entry
// its context builds: command (which, as an ENTRYPOINT, drops the built
// args unless args are set too), args, env (by name), workingDir,
// overrideCommand; files and hostPaths are added.
func overlayEntry(built, table ImageEntry) ImageEntry {
	e := built
	if len(table.Command) > 0 {
		e.Command, e.Args = table.Command, nil
	}
	if len(table.Args) > 0 {
		e.Args = table.Args
	}
	if len(table.Env) > 0 {
		e.Env = maps.Clone(e.Env)
		if e.Env == nil {
			e.Env = map[string]string{}
		}
		maps.Copy(e.Env, table.Env)
	}
	if len(e.Env) == 0 {
		e.Env = nil
	}
	if table.WorkingDir != "" {
		e.WorkingDir = table.WorkingDir
	}
	e.OverrideCommand = table.OverrideCommand
	e.PaddleRelease = "" // applied by resolveContexts
	e.Files = append(slices.Clone(e.Files), table.Files...)
	for _, p := range table.HostPaths {
		if !slices.Contains(e.HostPaths, p) {
			e.HostPaths = append(e.HostPaths, p)
		}
	}
	e.Context = table.Context
	return e
}
