// Command paddlejob-operator runs the PaddleJob controller manager.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/paddlejob/paddlejob/internal/operator"
	"github.com/paddlejob/paddlejob/internal/version"
	ctrl "sigs.k8s.io/controller-runtime"
)

func main() {
	opts := operator.DefaultOptions()
	opts.BindFlags(flag.CommandLine)
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println("paddlejob-operator", version.String())
		return
	}
	if err := operator.Run(ctrl.SetupSignalHandler(), opts); err != nil {
		fmt.Fprintln(os.Stderr, "paddlejob-operator:", err)
		os.Exit(1)
	}
}
