package localcluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"k8s.io/client-go/tools/clientcmd"
)

// ExamplesDir is where the example jobs (examples/jobs) keep their output
// through hostPath volumes: `paddlejob up` lets pods write there unless told
// other directories (--host-path-rw), so that the examples run as written.
const ExamplesDir = "/tmp/paddlejob-examples"

// createExamplesDir makes dir, the examples' output directory, when pods may
// write there (writable lists it) and it does not exist: a node creates a
// DirectoryOrCreate hostPath only inside a writable directory that exists,
// so on a fresh machine the examples' pods could not start. Pods of every
// host uid write there, as in the directories the node creates (0777).
func createExamplesDir(dir string, writable []string) error {
	if !slices.Contains(writable, dir) {
		return nil
	}
	if err := os.Mkdir(dir, 0o777); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return fmt.Errorf("creating %s, where the example jobs write (paddlejob up --host-path-rw): %w", dir, err)
	}
	return os.Chmod(dir, 0o777) // past the umask
}

// absoluteDirs are dirs made absolute, the empty ones left out
// (--host-path-rw= lists none).
func absoluteDirs(dirs []string) ([]string, error) {
	var out []string
	for _, d := range dirs {
		if d == "" {
			continue
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, err
		}
		out = append(out, abs)
	}
	return out, nil
}

// KubeconfigFiles are the kubeconfigs no pod may mount, nor a directory
// holding one: those `up` writes the cluster's admin credentials into
// (UserKubeconfig's, $KUBECONFIG's) and the user's ~/.kube/config, which
// holds other clusters' credentials too.
func (o *Options) KubeconfigFiles() []string {
	files := []string{clientcmd.RecommendedHomeFile}
	files = append(files, filepath.SplitList(os.Getenv(clientcmd.RecommendedConfigPathEnvVar))...)
	if o.UserKubeconfig != nil {
		files = append(files, o.UserKubeconfig.GetLoadingPrecedence()...)
		files = append(files, o.UserKubeconfig.GetDefaultFilename())
	}
	var out []string
	for _, f := range files {
		if abs, err := filepath.Abs(f); err == nil && f != "" && !slices.Contains(out, abs) {
			out = append(out, abs)
		}
	}
	return out
}
