package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/paddlejob/paddlejob/examples/ctr"
)

// runGenData writes the synthetic rows in the text format.
func runGenData(_ context.Context, args []string, out streams) error {
	fs := flag.NewFlagSet("gen-data", flag.ContinueOnError)
	path := fs.String("out", "", "file to write, - for standard output (required)")
	rows := fs.Int("rows", defaultRows, "rows to generate")
	seed := fs.Uint64("seed", ctr.DefaultPlan().Seed, "seed of the data set")
	test := fs.Bool("test", false, "write the test split instead of the training split")
	trainers := fs.Int("trainers", 1, "write only one trainer's shard: row i goes to trainer i % trainers")
	trainerID := fs.Int("trainer-id", 0, "the trainer whose shard to write, with --trainers")
	if err := parseFlags(fs, args, out.stderr); err != nil {
		return err
	}
	switch {
	case *path == "":
		return usagef("--out is required")
	case *rows < 0:
		return usagef("--rows must not be negative")
	case *trainers < 1 || *trainerID < 0 || *trainerID >= *trainers:
		return usagef("--trainer-id=%d is not in [0, --trainers=%d)", *trainerID, *trainers)
	}
	split, splitName := ctr.TrainSplit, "train"
	if *test {
		split, splitName = ctr.TestSplit, "test"
	}
	src := ctr.NewSource(*seed)
	data := ctr.Shard(src.Rows(split, *rows), *trainers, *trainerID)

	if *path == "-" {
		if err := ctr.WriteRows(out.stdout, data); err != nil {
			return err
		}
	} else if err := writeRowsFile(*path, data); err != nil {
		return err
	}
	fmt.Fprintf(out.stderr, "wrote %d %s rows (seed %d) to %s; the true model's AUC on them is %.4f\n",
		len(data), splitName, *seed, *path, src.OptimalAUC(data))
	return nil
}

func writeRowsFile(path string, rows []ctr.Row) error {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := ctr.WriteRows(file, rows); err != nil {
		file.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := file.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
