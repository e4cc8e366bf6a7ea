package launcher

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/paddlejob/paddlejob/internal/fsutil"
)

// DataMode is how the trainer's files reach its working directory.
type DataMode string

const (
	// DataLink symlinks each entry: instant, and the volume stays the source.
	DataLink DataMode = "link"
	// DataCopy copies each entry, as start_paddle.py's cp -rf did.
	DataCopy DataMode = "copy"
)

// ParseDataMode validates a --data-mode value.
func ParseDataMode(s string) (DataMode, error) {
	switch m := DataMode(s); m {
	case DataLink, DataCopy:
		return m, nil
	}
	return "", fmt.Errorf("--data-mode=%q: want %q or %q", s, DataLink, DataCopy)
}

// dataDirCandidates are where a trainer's share of the data may be, in the
// order looked at: the three-node tutorial's layout (what `paddlejob data split` writes),
// the AWS tutorial's, and the bare per-trainer directory.
func dataDirCandidates(jobDir string, id int) []string {
	n := strconv.Itoa(id)
	return []string{
		filepath.Join(jobDir, n, "data"),
		filepath.Join(jobDir, "data", n),
		filepath.Join(jobDir, n),
	}
}

// stageData puts the entries of this trainer's data directory into
// <workdir>/data. A job without one is not an error: the data may be in
// the image (a single-node Job).
func stageData(jobDir string, id int, workdir string, mode DataMode, log io.Writer) error {
	candidates := dataDirCandidates(jobDir, id)
	for _, dir := range candidates {
		if isDir(dir) {
			dst := filepath.Join(workdir, "data")
			if err := stageEntries(dir, dst, mode); err != nil {
				return fmt.Errorf("staging trainer %d's data: %w", id, err)
			}
			fmt.Fprintf(log, "paddlejob launch: %s the entries of %s into %s\n", verb(mode), dir, dst)
			return nil
		}
	}
	fmt.Fprintf(log, "paddlejob launch: warning: no data directory for trainer %d (looked for %s, %s, %s); starting without ./data\n",
		id, candidates[0], candidates[1], candidates[2])
	return nil
}

// stageConfig puts the entries of $JOB_PATH/$JOB_NAME/$TRAIN_CONFIG_DIR into
// the working directory, as the three-node tutorial's start.sh did before starting Paddle.
func stageConfig(jobDir, configDir, workdir string, mode DataMode, log io.Writer) error {
	src := filepath.Join(jobDir, configDir)
	if !isDir(src) {
		return fmt.Errorf("TRAIN_CONFIG_DIR=%s: %s is not a directory", configDir, src)
	}
	if err := stageEntries(src, workdir, mode); err != nil {
		return fmt.Errorf("staging TRAIN_CONFIG_DIR=%s: %w", configDir, err)
	}
	fmt.Fprintf(log, "paddlejob launch: %s the entries of %s into %s\n", verb(mode), src, workdir)
	return nil
}

func verb(mode DataMode) string {
	if mode == DataCopy {
		return "copied"
	}
	return "linked"
}

// stageEntries links or copies every entry of src into dst (created when
// missing), replacing entries of the same name, like `cp -rf src/* dst/`.
func stageEntries(src, dst string, mode DataMode) error {
	src, err := filepath.Abs(src)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("reading %s: %w", src, err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		if mode == DataLink {
			if err := os.RemoveAll(to); err != nil {
				return err
			}
			if err := os.Symlink(from, to); err != nil {
				return err
			}
			continue
		}
		// Never copy through a link an earlier --data-mode=link run left:
		// that would write into the shared volume.
		if info, err := os.Lstat(to); err == nil && info.Mode()&fs.ModeSymlink != 0 {
			if err := os.Remove(to); err != nil {
				return err
			}
		}
		if err := fsutil.CopyTree(from, to); err != nil {
			return err
		}
	}
	return nil
}

func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}
