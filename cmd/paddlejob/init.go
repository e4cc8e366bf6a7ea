package main

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"github.com/spf13/cobra"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/pkg/client"
	"github.com/paddlejob/paddlejob/python"
)

func init() { register(newInitCmd) }

//go:embed starter
var starter embed.FS

// starterPaddleVersion is the release of the starter's base image: the one
// the project tests (docs/env-contract.md) and the local cluster runs.
const starterPaddleVersion = "3.0.0"

// starterJobSuffixes lengthen the program's name into its jobs' names.
var starterJobSuffixes = []string{"-ps", "-collective"}

type initFlags struct {
	name, image string
	rows        int
}

func newInitCmd() *cobra.Command {
	var f initFlags
	cmd := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a starter PaddlePaddle program: train.py, its Dockerfile, data and a PaddleJob for PS and collective mode",
		Long: `Write into DIR (default: the current directory) a distributed training program to make
your own: a fleet train.py that trains in parameter-server or collective mode, reports
its progress (paddlejob.report_progress), checkpoints every epoch and resumes after a
restart, and writes its model; a Dockerfile on the Paddle image the project tests; the
SDK's in-pod helpers it imports (paddlejob/); a small data set (data/); and two
PaddleJobs, job-ps.yaml and job-collective.yaml, mounting data/ and output/.

Run it on the local cluster, from its build context, with no image to build:
  paddlejob run -f job-ps.yaml --build-context DIR
and on a real cluster after docker build and push (docs/your-own-program.md).
DIR may exist, but none of the files init writes may.`,
		Example: `  mkdir ctr && cd ctr && paddlejob init
  paddlejob init ./ctr --image registry.example.com/team/ctr:v1`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return writeStarter(cmd, dir, f)
		},
	}
	cmd.Flags().StringVar(&f.name, "name", "", "the program's name, which names its jobs (NAME-ps, NAME-collective); default: DIR's name")
	cmd.Flags().StringVar(&f.image, "image", "", "the image the jobs run, as your cluster pulls it (default: NAME:v1, which the local cluster runs from DIR)")
	cmd.Flags().IntVar(&f.rows, "rows", 4000, "training rows of the data set written to data/ (and a quarter as many test rows)")
	return cmd
}

// starterValues fill the starter's templates.
type starterValues struct {
	Name, Image, PaddleVersion string
	DataDir, OutputDir         string
}

func writeStarter(cmd *cobra.Command, dir string, f initFlags) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	name := f.name
	if name == "" {
		name = programName(filepath.Base(abs))
	}
	maxName := paddlev1.MaxJobNameLength - len("-collective")
	if !regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`).MatchString(name) || len(name) > maxName {
		return fmt.Errorf("--name %q: lowercase letters, digits and '-', starting with a letter, at most %d characters (the jobs are NAME%s)",
			name, maxName, strings.Join(starterJobSuffixes, ", NAME"))
	}
	image := f.image
	if image == "" {
		image = name + ":v1"
	}
	if err := client.ValidateImage(image); err != nil {
		return fmt.Errorf("--image %q: %w", image, err)
	}
	if f.rows < 100 {
		return fmt.Errorf("--rows %d: at least 100", f.rows)
	}
	v := starterValues{Name: name, Image: image, PaddleVersion: starterPaddleVersion,
		DataDir: filepath.Join(abs, "data"), OutputDir: filepath.Join(abs, "output")}

	files := map[string][]byte{}
	for file, tmpl := range map[string]string{"Dockerfile": "Dockerfile.tmpl", "job-ps.yaml": "job-ps.yaml.tmpl",
		"job-collective.yaml": "job-collective.yaml.tmpl", "README.md": "README.md.tmpl"} {
		data, err := renderStarter(tmpl, v)
		if err != nil {
			return err
		}
		files[file] = data
	}
	if files["train.py"], err = starter.ReadFile("starter/train.py"); err != nil {
		return err
	}
	if err := fs.WalkDir(python.SDK(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(python.SDK(), p)
		files[filepath.Join("paddlejob", p)] = data
		return err
	}); err != nil {
		return err
	}
	train, test := starterData(f.rows)
	files["data/train.csv"], files["data/test.csv"] = train, test

	if err := writeNewFiles(abs, files); err != nil {
		return err
	}
	if err := os.MkdirAll(v.OutputDir, 0o755); err != nil {
		return err
	}
	// The job's pods write here, as whatever uid they run as: a root node's
	// pods are not root on the host (docs/local-node.md#host-paths).
	if err := os.Chmod(v.OutputDir, 0o777); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "wrote %s in %s: train.py, Dockerfile, paddlejob/, data/ (%d training and %d test rows), job-ps.yaml, job-collective.yaml, README.md\n",
		name, abs, f.rows, f.rows/4)
	rel := dir
	fmt.Fprintf(out, "\nrun it on the local cluster (paddlejob up), from its build context:\n  paddlejob run -f %s --build-context %s\n  paddlejob run -f %s --build-context %s\n",
		filepath.Join(rel, "job-ps.yaml"), rel, filepath.Join(rel, "job-collective.yaml"), rel)
	if f.image == "" {
		fmt.Fprintf(out, "\nfor a real cluster, build and push it to a registry the cluster pulls from and put that name in both YAMLs\n(or run init with --image registry.example.com/team/%s:v1): see docs/your-own-program.md\n", name)
	}
	return nil
}

// writeNewFiles writes files (by path relative to dir) only when none of
// them exists: init replaces nothing.
func writeNewFiles(abs string, files map[string][]byte) error {
	var exist []string
	for file := range files {
		if _, err := os.Lstat(filepath.Join(abs, file)); err == nil {
			exist = append(exist, file)
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if len(exist) > 0 {
		return fmt.Errorf("%s already holds %s: init writes a new program and replaces nothing; give it another directory", abs, strings.Join(slices.Sorted(slices.Values(exist)), ", "))
	}
	for _, file := range slices.Sorted(maps.Keys(files)) {
		path := filepath.Join(abs, file)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, files[file], 0o644); err != nil {
			return err
		}
	}
	return nil
}

func renderStarter(name string, v starterValues) ([]byte, error) {
	t, err := template.ParseFS(starter, "starter/"+name)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// programName makes a directory's name a job name: lowercase, letters and
// digits joined by '-', starting with a letter.
func programName(base string) string {
	s := strings.ToLower(base)
	s = regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(s, "-")
	s = strings.Trim(s, "-")
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "train-" + s
	}
	s = strings.TrimRight(s, "-")
	if max := paddlev1.MaxJobNameLength - len("-collective"); len(s) > max {
		s = strings.TrimRight(s[:max], "-")
	}
	return s
}

// starterData is a synthetic binary classification data set, train and
// test CSV (label, then 8 features): a hidden model draws each label with
// probability sigmoid(z), z linear in the features plus one interaction, so
// a model learns it well but not perfectly (an accuracy of about 0.84 at
// best: the hidden model's own).
func starterData(rows int) (train, test []byte) {
	rng := rand.New(rand.NewPCG(2026, 11))
	weights := []float64{1.5, -2, 1, 0.5, -1, 0, 0.75, -0.5}
	write := func(n int) []byte {
		var b bytes.Buffer
		x := make([]float64, len(weights))
		for i := 0; i < n; i++ {
			z := 0.0
			for j := range x {
				x[j] = rng.NormFloat64()
				z += weights[j] * x[j]
			}
			z += x[0] * x[1]
			label := 0
			if rng.Float64() < 1/(1+math.Exp(-z)) {
				label = 1
			}
			fmt.Fprintf(&b, "%d", label)
			for _, v := range x {
				fmt.Fprintf(&b, ",%.4f", v)
			}
			b.WriteByte('\n')
		}
		return b.Bytes()
	}
	return write(rows), write(rows / 4)
}
