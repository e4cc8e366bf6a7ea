// Command paddlejob-launch is the in-pod launcher of plain batch/v1 Jobs that
// train with PaddlePaddle: the container entrypoint that finds the Job's pods
// and starts each pod's pserver and trainer (`paddlejob launch`), and the
// data split of the tutorial's data Job (`paddlejob data split`). It is what
// a training image copies (docs/launcher.md), a fraction of the paddlejob
// binary, which holds the CLI, the operator and the local cluster as well.
//
// Its commands are the CLI's own (internal/podtools/podcmd). Copied into an
// image as paddlejob, command lines written for the CLI (`paddlejob launch
// -- ...`, `paddlejob data split ...`) run unchanged.
package main

import (
	"github.com/spf13/cobra"

	"github.com/paddlejob/paddlejob/internal/podtools/podcmd"
)

func main() { podcmd.Main(newRootCmd()) }

// newRootCmd is the launcher, with the CLI's in-pod commands below it.
func newRootCmd() *cobra.Command { return podcmd.Root(podcmd.LauncherName) }
