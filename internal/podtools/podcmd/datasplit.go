package podcmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/paddlejob/paddlejob/internal/podtools/datasplit"
)

// Data is the `data` command, with `split`, as invoked by path: `paddlejob
// data` in the CLI, `paddlejob-launch data` in the in-pod binary.
func Data(path string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   lastWord(path),
		Short: "Prepare training data for the trainers of a job",
	}
	cmd.AddCommand(dataSplit(path + " split"))
	return cmd
}

func dataSplit(path string) *cobra.Command {
	var (
		inputs []string
		opts   datasplit.Options
		mode   string
	)
	cmd := &cobra.Command{
		Use:   "split --input FILE|DIR... --out DIR [--job NAME] --parts N",
		Short: "Split line-based data into one part per trainer: <out>/<job>/<i>/data/<file>",
		Long: `Split line-based training data into N parts in the three-node tutorial's layout, <out>/<job>/<i>/data/<file>
for i in 0..N-1, which 'paddlejob launch' links or copies into each trainer's ./data.

Lines are numbered from 0 across all inputs in the order given (a directory contributes its
files in lexical path order). round-robin gives line g to part g mod N; contiguous gives each
part one run of consecutive lines, the first (total mod N) parts one line more. Every output line
ends with a newline. Inputs are streamed; a line may be up to 16 MiB.

--out and --parts default to $OUT_DIR and $SPLIT_COUNT, so the command can be the container of
the three-node tutorial's data Job. Without --job the parts go directly into --out. Existing parts are replaced
only with --force; other files in the directory are left alone.`,
		Example: fmt.Sprintf(`  %[1]s --input train.txt --out /mnt/jobpath --job paddle-cluster-job --parts 3
  OUT_DIR=/home/work/mfs/paddle-cluster-job SPLIT_COUNT=3 %[1]s --input /data --mode contiguous`, path),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := dataSplitDefaults(cmd, &opts); err != nil {
				return err
			}
			m, err := datasplit.ParseMode(mode)
			if err != nil {
				return err
			}
			opts.Mode = m
			if opts.Sources, err = datasplit.FileSources(inputs, filepath.Join(opts.OutDir, opts.Job)); err != nil {
				return err
			}
			parts, err := datasplit.Run(opts)
			if err != nil {
				return err
			}
			return printParts(cmd, parts)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&inputs, "input", nil, "input file or directory (repeatable)")
	f.StringVar(&opts.OutDir, "out", "", "output directory (default $OUT_DIR)")
	f.StringVar(&opts.Job, "job", "", "job name: the directory under --out that holds the parts")
	f.IntVar(&opts.Parts, "parts", 0, "number of parts, one per trainer (default $SPLIT_COUNT)")
	f.StringVar(&mode, "mode", string(datasplit.RoundRobin), "round-robin or contiguous")
	f.StringVar(&opts.FileName, "name", "", "file name of each part in <i>/data/ (default: the input's name if one file, else data.txt)")
	f.BoolVar(&opts.Force, "force", false, "replace the parts of an earlier split")
	return cmd
}

// dataSplitDefaults takes --out and --parts from OUT_DIR and SPLIT_COUNT
// when the flags are not given.
func dataSplitDefaults(cmd *cobra.Command, opts *datasplit.Options) error {
	if !cmd.Flags().Changed("out") {
		opts.OutDir = os.Getenv("OUT_DIR")
	}
	if !cmd.Flags().Changed("parts") {
		if s := os.Getenv("SPLIT_COUNT"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return fmt.Errorf("SPLIT_COUNT=%q: want a positive integer", s)
			}
			opts.Parts = n
		}
	}
	return nil
}

func printParts(cmd *cobra.Command, parts []datasplit.Part) error {
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "PART\tLINES\tBYTES\t FILE")
	var lines, bytes int64
	for i, p := range parts {
		fmt.Fprintf(w, "%d\t%d\t%d\t %s\n", i, p.Lines, p.Bytes, p.Path)
		lines += p.Lines
		bytes += p.Bytes
	}
	fmt.Fprintf(w, "total\t%d\t%d\t %d parts\n", lines, bytes, len(parts))
	return w.Flush()
}
