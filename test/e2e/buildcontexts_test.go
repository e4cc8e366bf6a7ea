package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/paddlejob/paddlejob/internal/localcluster"
)

// Ten new build contexts in a row, as ten `paddlejob run --build-context`
// of ten new images would add them: each restarts the node to read its new
// image table, a restart the cluster asks for and the supervisor does at
// once, not a crash it backs off from (1 s, 2 s... 2m8s before the eighth,
// past the 2 minutes the node is given to come back). Then a real
// parameter-server job runs to completion on the node. It runs a cluster
// of its own: adding an image restarts the node.
func TestManyNewBuildContextsInARow(t *testing.T) {
	t.Parallel()
	home, err := os.MkdirTemp("", "paddlejob-e2e-contexts-")
	if err != nil {
		t.Fatal(err)
	}
	o := opts
	o.Home = home
	_, pj := withCluster(t, o)
	before := component(t, o, localcluster.NodeName)

	for i := range 10 {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("context-%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		dockerfile := fmt.Sprintf("FROM busybox\nENV CONTEXT=%d\nCOPY hello.sh /app/\nCMD [\"sh\", \"/app/hello.sh\"]\n", i)
		if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "hello.sh"), []byte(fmt.Sprintf("echo context %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		image := fmt.Sprintf("e2e/context-%d:v1", i)
		start := time.Now()
		added, err := localcluster.AddImages(context.Background(), home, map[string]string{image: dir})
		if err != nil {
			t.Fatalf("adding build context %d: %v", i+1, err)
		}
		if len(added) != 1 || !added[0].New {
			t.Fatalf("build context %d: %+v, want one new image", i+1, added)
		}
		t.Logf("build context %d: the node restarted and was Ready again in %s", i+1, time.Since(start).Round(10*time.Millisecond))
	}

	after := component(t, o, localcluster.NodeName)
	if after.Restarts != before.Restarts || after.Requested != before.Requested+10 || after.State != "running" {
		t.Errorf("the node after ten new build contexts: %d restarts after a crash (before: %d), %d on request (before: %d), %s; want no crash and 10 on request",
			after.Restarts, before.Restarts, after.Requested, before.Requested, after.State)
	}

	job := loadJob(t, "config/samples/seed004/example-1-wide-and-deep.yaml")
	done, logs := runReadingLogs(t, pj, job)
	checkPSJob(t, done, logs)
}
