package node

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/paddlejob/paddlejob/internal/fsutil"
)

// A container's image files: each container gets a private copy of its
// image's files, as a container gets a writable layer over its image. The
// copy is made in the pod's directory each time the container starts (a
// restarted container starts from the image again, as under a kubelet) and
// bound read-write into the sandbox, so programs can write next to their code
// without the write reaching the image's source or another container. The
// host's directories stand in for the image's base: where an image directory
// is also a host directory (/usr/local, say), the copy is bound entry by
// entry inside it instead of hiding it.

// prepareImageMounts makes the container's copy of its image's files in root
// (replacing an earlier run's) and returns the mounts the sandbox needs: the
// copy's entries read-write, then the image's host paths read-only. The
// working directory wd is made in the copy too when neither the host nor a
// volume (volumeTargets) nor a host path has it, as Docker makes a WORKDIR,
// so it is writable. host is the host file system rooted at "/".
//
// The copy's symlinks arrive as symlinks, as Docker's do, resolved inside
// the sandbox; every other entry is opened beneath root with no symlink
// followed and bound by its descriptor, so no bind reaches a link's host
// target. A volume mounted through one of the copy's links is refused: bwrap
// would follow the link on the host to make the mount point. The mounts'
// files are the caller's to close, also on error.
func prepareImageMounts(host fs.FS, root string, entry ImageEntry, wd string, volumeTargets []string) ([]mount, error) {
	if err := removeTree(root); err != nil {
		return nil, fmt.Errorf("removing the previous copy of the image's files: %w", err)
	}
	elsewhere := append(append(slices.Clone(volumeTargets), entry.HostPaths...), "/proc", "/dev")
	makeWD := wd != "" && path.Clean(wd) != "/" && !underAny(path.Clean(wd), elsewhere)
	if makeWD {
		if _, err := fs.Stat(host, rel(wd)); err == nil {
			makeWD = false
		}
	}
	var mounts []mount
	if len(entry.Files) > 0 || makeWD {
		if err := os.MkdirAll(root, 0o755); err != nil {
			return nil, err
		}
		for _, f := range entry.Files {
			if err := copyImageFile(root, f); err != nil {
				return nil, err
			}
		}
		if makeWD {
			if err := mkdirInImage(root, path.Clean(wd)); err != nil {
				return nil, fmt.Errorf("working directory %s: %w", wd, err)
			}
		}
		for _, t := range volumeTargets {
			if link := linkAlong(root, t); link != "" {
				return nil, configErrorf("volumeMount %s goes through the image's symbolic link %s: mount it elsewhere", t, link)
			}
		}
		points, err := imageBindPoints(host, root)
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, points...)
		if err := openImageBindPoints(root, mounts); err != nil {
			return mounts, err
		}
	}
	for _, p := range entry.HostPaths {
		f, err := openPath(p)
		if err != nil {
			return mounts, fmt.Errorf("host path %s of the image: %w", p, err)
		}
		mounts = append(mounts, mount{Source: p, Target: p, ReadOnly: true, File: f})
	}
	return mounts, nil
}

// openImageBindPoints opens the sources of the bind points (not the links)
// beneath the image copy's root, refusing any symlink on the way.
func openImageBindPoints(root string, mounts []mount) error {
	dir, err := openRoot(root)
	if err != nil {
		return err
	}
	defer dir.Close()
	for i := range mounts {
		m := &mounts[i]
		if m.Symlink != "" {
			continue
		}
		name, err := filepath.Rel(root, m.Source)
		if err != nil {
			return err
		}
		if m.File, err = openBeneath(dir, name, noLinks); err != nil {
			return fmt.Errorf("image file %s: %w", m.Target, err)
		}
	}
	return nil
}

// linkAlong returns the first path along target (target included) that is a
// symlink in the image copy at root, or "".
func linkAlong(root, target string) string {
	cur := "/"
	for _, part := range strings.Split(rel(target), "/") {
		if part == "." || part == "" {
			continue
		}
		cur = path.Join(cur, part)
		info, err := os.Lstat(filepath.Join(root, filepath.FromSlash(cur)))
		if err != nil {
			return ""
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			return cur
		}
	}
	return ""
}

// imageBindPoints lists what to bind of the image copy in root: each entry
// the host lacks, or has as something other than a directory, is bound whole
// (a symlink is made as a symlink); into the host's directories the copy
// descends. Targets follow the host's symlinks (an image file in /bin/ lands
// in /usr/bin/ on a merged-/usr host), since the sandbox shows the host's
// symlinks.
func imageBindPoints(host fs.FS, root string) ([]mount, error) {
	var out []mount
	var walk func(imageDir, target string) error
	walk = func(imageDir, target string) error {
		entries, err := os.ReadDir(filepath.Join(root, imageDir))
		if err != nil {
			return err
		}
		for _, e := range entries {
			img, t := path.Join(imageDir, e.Name()), path.Join(target, e.Name())
			if err := checkImagePath(t); err != nil {
				return fmt.Errorf("image file %s: %w", img, err)
			}
			source := filepath.Join(root, filepath.FromSlash(img))
			if e.Type()&fs.ModeSymlink != 0 {
				dest, err := os.Readlink(source)
				if err != nil {
					return err
				}
				if err := checkImageLink(t); err != nil {
					return fmt.Errorf("image file %s: %w", img, err)
				}
				out = append(out, mount{Source: source, Target: t, Symlink: dest})
				continue
			}
			if e.IsDir() {
				if real, err := hostRealPath(host, t); err == nil {
					if st, err := fs.Stat(host, rel(real)); err == nil && st.IsDir() {
						if err := walk(img, real); err != nil {
							return err
						}
						continue
					}
				}
			}
			out = append(out, mount{Source: source, Target: t})
		}
		return nil
	}
	return out, walk("/", "/")
}

// checkImageLink refuses an image symlink where the sandbox has fixed
// entries of its own: a system root, /etc (its files are the host's), /tmp.
func checkImageLink(t string) error {
	fixed := append(append([]string{"/etc", "/tmp", "/etc/hosts", "/etc/hostname", "/etc/resolv.conf"}, sandboxRoots...), etcFiles...)
	for _, f := range fixed {
		if t == f || isUnder(f, t) {
			return fmt.Errorf("a symbolic link cannot replace the sandbox's %s", f)
		}
	}
	return nil
}

// hostRealPath resolves the symlinks along p in host.
func hostRealPath(host fs.FS, p string) (string, error) {
	parts := strings.Split(rel(p), "/")
	cur, hops := "/", 0
	for i := 0; i < len(parts); i++ {
		if parts[i] == "" || parts[i] == "." {
			continue
		}
		next := path.Join(cur, parts[i])
		info, err := fs.Lstat(host, rel(next))
		if err != nil {
			return "", err
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return "", fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		dest, err := fs.ReadLink(host, rel(next))
		if err != nil {
			return "", err
		}
		if !path.IsAbs(dest) {
			dest = path.Join(cur, dest)
		}
		parts = append(strings.Split(rel(dest), "/"), parts[i+1:]...)
		cur, i = "/", -1
	}
	return cur, nil
}

// copyImageFile copies f.Source into root at f.Path: a file to that path, a
// directory's content into it, merged with what earlier files put there.
// Symlinks inside a directory are copied as symlinks; Source itself is
// followed.
func copyImageFile(root string, f ImageFile) error {
	st, err := os.Stat(f.Source)
	if err != nil {
		return fmt.Errorf("image file %s: %w", f.Source, err)
	}
	target := path.Clean("/" + f.Path)
	if target != "/" {
		if err := mkdirInImage(root, path.Dir(target)); err != nil {
			return fmt.Errorf("image file %s: %w", f.Path, err)
		}
	}
	dst := filepath.Join(root, filepath.FromSlash(target))
	if err := copyEntry(f.Source, dst, st, f.Ignore.skipper(f.Source)); err != nil {
		return fmt.Errorf("copying image file %s to %s: %w", f.Source, f.Path, err)
	}
	return nil
}

// mkdirInImage makes the directory p (and its parents) in the image copy at
// root, refusing to go through anything but directories, so that no write
// leaves root by a symlink.
func mkdirInImage(root, p string) error {
	cur := root
	for _, part := range strings.Split(rel(p), "/") {
		if part == "." || part == "" {
			continue
		}
		cur = filepath.Join(cur, part)
		info, err := os.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(cur, 0o755); err != nil {
				return err
			}
		case err != nil:
			return err
		case !info.IsDir():
			return fmt.Errorf("%s is not a directory in the image", "/"+strings.TrimPrefix(filepath.ToSlash(strings.TrimPrefix(cur, root)), "/"))
		}
	}
	return nil
}

// copyEntry copies src, described by st, to dst: directories merged into
// what dst has, files and symlinks replacing it. Copies are owner-writable
// (the container's layer is its own); modes and times are kept otherwise.
// Anything but regular files, directories and symlinks is refused. skip,
// when not nil, says which entries under src to leave out.
func copyEntry(src, dst string, st fs.FileInfo, skip func(p string, isDir bool) (bool, error)) error {
	existing, err := os.Lstat(dst)
	exists := err == nil
	switch {
	case st.IsDir():
		if exists && !existing.IsDir() {
			if err := os.Remove(dst); err != nil {
				return err
			}
			exists = false
		}
		if !exists {
			if err := os.Mkdir(dst, 0o700); err != nil {
				return err
			}
		} else if err := os.Chmod(dst, existing.Mode().Perm()|0o700); err != nil {
			return err
		}
		entries, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, e := range entries {
			info, err := e.Info()
			if err != nil {
				return err
			}
			if skip != nil {
				skipped, err := skip(filepath.Join(src, e.Name()), info.IsDir())
				if err != nil {
					return err
				}
				if skipped {
					continue
				}
			}
			if err := copyEntry(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()), info, skip); err != nil {
				return err
			}
		}
		if err := os.Chmod(dst, st.Mode().Perm()|0o700); err != nil {
			return err
		}
		return os.Chtimes(dst, st.ModTime(), st.ModTime())
	case st.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if exists {
			if err := removeTree(dst); err != nil {
				return err
			}
		}
		return os.Symlink(target, dst)
	case st.Mode().IsRegular():
		if exists {
			if err := removeTree(dst); err != nil {
				return err
			}
		}
		return copyRegularFile(src, dst, st)
	}
	return fmt.Errorf("%s %s", src, unsupportedFileMessage(st.Mode()))
}

// copyRegularFile copies a file's bytes: never a hard link, so a write to
// the copy cannot reach the source.
func copyRegularFile(src, dst string, st fs.FileInfo) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Chmod(st.Mode().Perm() | 0o200); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chtimes(dst, st.ModTime(), st.ModTime())
}

// removeTree removes p and everything under it, making directories writable
// first so that read-only ones written by a container go too, and detaching
// the mounts under it first.
func removeTree(p string) error {
	fsutil.UnmountUnder(p) // memory-backed volumes (memoryvolume.go)
	err := os.RemoveAll(p)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(q, 0o700)
		}
		return nil
	})
	return os.RemoveAll(p)
}
