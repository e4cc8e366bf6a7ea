// Command kubebin prints a directory holding the control-plane binaries,
// building them from Go modules into the cache the first time (see
// internal/localcluster/kubebin). Progress goes to stderr, the directory to stdout:
//
//	export KUBEBUILDER_ASSETS=$(go run ./hack/kubebin -components etcd,kube-apiserver)
//
// -addons also builds the named add-ons (volcano, coscheduling, kueue) that
// `paddlejob up --with` runs, so that a test run does not spend its timeout
// building them; -cluster-dns builds the cluster's DNS server (CoreDNS) that
// every local cluster runs; -node-runtime builds the container-runtime node's
// kubelet, containerd, runc and CNI plugins, and its images.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
	"github.com/paddlejob/paddlejob/internal/localcluster/runtimenode"
)

func main() {
	components := flag.String("components", strings.Join(kubebin.AllComponents, ","), "comma-separated binaries to provide")
	addons := flag.String("addons", "", "comma-separated add-ons to build too: "+strings.Join(kubebin.AddonNames, ", "))
	clusterDNS := flag.Bool("cluster-dns", false, "build the cluster DNS server (CoreDNS) too")
	nodeRuntime := flag.Bool("node-runtime", false, "build the container-runtime node's kubelet, containerd, runc and CNI plugins too")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	dir, err := kubebin.Ensure(ctx, kubebin.Options{
		Dirs: []string{os.Getenv("KUBEBUILDER_ASSETS"), os.Getenv("PADDLEJOB_BINARIES")},
		Log:  os.Stderr,
	}, strings.Split(*components, ",")...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubebin:", err)
		os.Exit(1)
	}
	for _, a := range strings.Split(*addons, ",") {
		if a == "" {
			continue
		}
		if _, err := kubebin.EnsureAddon(ctx, kubebin.Options{Log: os.Stderr}, a); err != nil {
			fmt.Fprintln(os.Stderr, "kubebin:", err)
			os.Exit(1)
		}
	}
	if *clusterDNS {
		if _, err := kubebin.EnsureClusterDNS(ctx, kubebin.Options{Log: os.Stderr}); err != nil {
			fmt.Fprintln(os.Stderr, "kubebin:", err)
			os.Exit(1)
		}
	}
	if *nodeRuntime {
		rt, err := kubebin.EnsureNodeRuntime(ctx, kubebin.Options{Log: os.Stderr})
		if err == nil {
			_, err = runtimenode.BuildImages(ctx, kubebin.DefaultCacheDir(), rt, os.Stderr)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "kubebin:", err)
			os.Exit(1)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	fmt.Println(abs)
}
