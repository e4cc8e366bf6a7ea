// Package e2e runs whole PaddleJobs on the local cluster: a real control
// plane, the operator, and the process node running every pod as sandboxed
// processes.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
	"github.com/paddlejob/paddlejob/pkg/client"
)

var (
	// suiteClient is the SDK client of the suite's cluster, set once before
	// any test runs; a test names the client it uses (pj := suiteClient, or
	// the client of a cluster of its own) and hands it to the helpers.
	suiteClient *client.Client
	// cluster is the suite's running local cluster. Every test that only
	// adds jobs to it in a namespace of its own, or starts a cluster of its
	// own, runs in parallel (t.Parallel); those that stop a part of it
	// (TestNodeRestarts, TestOperatorRestartMidJob) or count the API
	// server's requests (TestProgressOfWideAndDeep) run alone, before them.
	cluster *localcluster.State
	opts    localcluster.Options
	binDir  string
)

// firstRunRepeat is how many times in a row the first-run tests run a
// program that must work the first time. Each run is a new job, not a
// retry: make test's 3 catch a race lost every time, as Gloo's was;
// make soak's 10 measure how rare a loss is.
var firstRunRepeat = flag.Int("first-run.repeat", 3, "how many times in a row TestFirstParameterServerProgramRuns and TestElasticJobFormsTheFirstTime run each program")

// suiteCluster is whether the suite starts its process-node cluster: the
// real-kubelet tier (TestContainerdNode, which starts a cluster of its own)
// runs as a test process of its own beside the suite's (make test-e2e), and
// needs none.
var suiteCluster = flag.Bool("suite-cluster", true, "start the suite's process-node cluster (false for a run of TestContainerdNode alone)")

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse() // -test.timeout, read by stopBeforeTimeout
	tmp, err := os.MkdirTemp("", "paddlejob-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	binDir = filepath.Join(tmp, "bin")
	build := exec.Command("go", "build", "-o", binDir+"/", "./cmd/paddlejob", "./cmd/paddlejob-launch")
	build.Dir = testenv.RepoRoot()
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the binaries:", err)
		return 1
	}
	opts = localcluster.Options{
		Home:       filepath.Join(tmp, "home"),
		Executable: filepath.Join(binDir, "paddlejob"),
		BinaryDirs: []string{os.Getenv("KUBEBUILDER_ASSETS")},
		// paddle-operator's examples 2 and 3 ask for GPUs and select nodes by
		// accelerator, as a user of the local cluster would start it for them.
		GPUs:       4,
		NodeLabels: map[string]string{"accelerator": "nvidia-tesla-p100"},
		// The suite sizes jobs as for a real cluster (the word2vec example asks 5
		// CPUs, the gang tests hundreds) on a 2-core machine: the node
		// advertises more than the host has, as up --capacity lets a user.
		Capacity: "cpu=256,memory=1Ti",
		// The tests' hostPath volumes are t.TempDir()s their jobs write
		// to: the node lets pods write below the temporary directory, as
		// up --host-path-rw does. The cluster's home is below it too, and
		// stays refused (internal/localcluster/node/nodesecurity_integration_test.go).
		HostPathRW: []string{os.TempDir()},
		// Host paths are refused unless listed: the read-only output of
		// the explanation tests lives in the user's cache (readOnlyHostDir).
		HostPathRO: []string{readOnlyHostParent()},
		Out:        os.Stderr,
	}
	stopBeforeTimeout()
	if !*suiteCluster {
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cluster, err = upCluster(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the local cluster:", err)
		return 1
	}
	defer func() {
		if cluster != nil {
			if err := downCluster(opts); err != nil {
				fmt.Fprintln(os.Stderr, "stopping the local cluster:", err)
			}
		}
	}()
	suiteClient, err = client.NewFromKubeconfig(cluster.Kubeconfig(), "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// running are the local clusters the suite has started and not stopped yet,
// by home: go test's -timeout panics without running a deferred Down or a
// test's Cleanup, and would leave them running.
var running sync.Map

// upCluster starts a local cluster the suite stops even when it times out.
func upCluster(ctx context.Context, o localcluster.Options) (*localcluster.State, error) {
	running.Store(o.Home, o)
	return localcluster.Up(ctx, o)
}

// downCluster stops a cluster upCluster started.
func downCluster(o localcluster.Options) error {
	defer running.Delete(o.Home)
	return localcluster.Down(o)
}

// stopBeforeTimeout stops every running cluster shortly before the suite's
// -timeout panics, all at once (a cluster's stop may take most of a
// minute): the tests then running fail, as they would at the timeout, and
// no cluster outlives the test binary.
func stopBeforeTimeout() {
	timeout := flag.Lookup("test.timeout").Value.(flag.Getter).Get().(time.Duration)
	if timeout <= 0 {
		return
	}
	margin := min(2*time.Minute, timeout/4)
	time.AfterFunc(timeout-margin, func() {
		fmt.Fprintf(os.Stderr, "the suite's %s timeout is %s away: stopping its local clusters\n", timeout, margin)
		var wg sync.WaitGroup
		running.Range(func(_, v any) bool {
			o := v.(localcluster.Options)
			o.Out = os.Stderr // not a test's log: its test may be over
			wg.Go(func() {
				if err := localcluster.Down(o); err != nil {
					fmt.Fprintln(os.Stderr, "stopping a local cluster:", err)
				}
			})
			return true
		})
		wg.Wait()
		fmt.Fprintln(os.Stderr, "the suite's local clusters are stopped")
	})
}
