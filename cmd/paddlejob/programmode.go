package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddlejob/paddlejob/internal/paddlefailure"
)

// A program fixes its mode with the calls it makes: fleet.init(is_collective=True)
// or paddle.distributed.init_parallel_env() train collectively, and
// Paddle's collective role maker refuses a parameter server's role (a
// collective program in a job with spec.ps fails on its servers);
// fleet.init_server() and fleet.run_server() serve parameters, which a job
// without spec.ps has no pod for (its workers train alone, or fail).
// validate --build-context reads a build context's Python files for those
// calls and warns when they and the job's mode disagree. A context with
// calls of both modes (paddlejob init's starter: one train.py for both
// YAMLs) or neither says nothing.

var (
	collectiveCall = regexp.MustCompile(`\bis_collective\s*=\s*True\b|\binit_parallel_env\s*\(`)
	serverCall     = regexp.MustCompile(`\b(?:init_server|run_server)\s*\(`)
)

// modeEvidence is where a context's programs make the calls of each mode:
// "train.py:118: fleet.init(is_collective=True)".
type modeEvidence struct {
	collective, server []string
}

// Bounds of a context's walk: its Python files, not a virtual environment's.
const (
	maxProgramFiles = 500
	maxProgramBytes = 1 << 20
)

// skippedDirs hold no program of the context's own.
var skippedDirs = []string{".git", "__pycache__", "node_modules", "site-packages", "dist-packages", "venv", ".venv"}

// programModeOf reads the Python files of a build context.
func programModeOf(fsys fs.FS) (modeEvidence, error) {
	var ev modeEvidence
	files := 0
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p != "." && slices.Contains(skippedDirs, d.Name()):
			return fs.SkipDir
		case d.IsDir() || path.Ext(p) != ".py":
			return nil
		}
		if files++; files > maxProgramFiles {
			return fs.SkipAll
		}
		if info, err := d.Info(); err != nil || info.Size() > maxProgramBytes {
			return err
		}
		f, err := fsys.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), maxProgramBytes)
		for n := 1; sc.Scan(); n++ {
			code, _, _ := strings.Cut(sc.Text(), "#")
			where := fmt.Sprintf("%s:%d: %s", p, n, strings.TrimSpace(code))
			if collectiveCall.MatchString(code) {
				ev.collective = append(ev.collective, where)
			}
			if serverCall.MatchString(code) {
				ev.server = append(ev.server, where)
			}
		}
		return sc.Err()
	})
	return ev, err
}

// programWarnings reads validate's --build-context values against the job
// and warns about its programs.
func programWarnings(values []string, job *unstructured.Unstructured) ([]string, error) {
	contexts, err := buildContextImages(values, job)
	if err != nil {
		return nil, err
	}
	return modeWarnings(job, contexts)
}

// modeWarnings are validate's warnings about a job whose build contexts
// (image → directory) hold programs of the other mode.
func modeWarnings(job *unstructured.Unstructured, contexts map[string]string) ([]string, error) {
	_, hasPS, _ := unstructured.NestedMap(job.Object, "spec", "ps")
	var out []string
	for _, image := range imagesOf(job) {
		dir, ok := contexts[image]
		if !ok {
			continue
		}
		ev, err := programModeOf(os.DirFS(dir))
		if err != nil {
			return nil, fmt.Errorf("reading the programs of build context %s: %w", dir, err)
		}
		program := fmt.Sprintf("PaddleJob %s: the program of build context %s (image %s)", job.GetName(), dir, image)
		switch {
		case hasPS && len(ev.collective) > 0 && len(ev.server) == 0:
			out = append(out, fmt.Sprintf("%s trains collectively (%s) and serves no parameters, but the job has spec.ps: "+
				"its parameter servers would fail at fleet.init; remove spec.ps, or run a parameter-server program (%s)",
				program, ev.collective[0], docOf("collective-program-in-ps-job")))
		case !hasPS && len(ev.server) > 0 && len(ev.collective) == 0:
			out = append(out, fmt.Sprintf("%s is a parameter-server program (%s), but the job has no spec.ps: "+
				"its workers would fail or each train alone; add spec.ps (%s)",
				program, ev.server[0], docOf("ps-program-in-collective-job")))
		}
	}
	return out, nil
}

// docOf is the docs section of a known failure.
func docOf(id string) string {
	for _, s := range paddlefailure.Signatures() {
		if s.ID == id {
			return paddlefailure.DocPath + "#" + s.Doc
		}
	}
	return paddlefailure.DocPath
}
