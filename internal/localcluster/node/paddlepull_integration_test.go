//go:build integration

package node

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// A pending runtime is installed by the node with pip into an empty cache
// when it is first needed, once for the two pods asking at the same time,
// and the image's PATH then runs its paddle. pip downloads paddlepaddle
// 2.6.2 (126 MB, the smallest pinned wheel) from the package index, or its
// own cache.
func TestPendingPaddleRuntimeInstallsWithPip(t *testing.T) {
	cache := t.TempDir()
	rts := &PaddleRuntimes{Default: "2.6.2", CacheDir: cache, Releases: map[string]PaddleRuntime{
		"2.6.2": PendingPaddleRuntime("2.6.2", true, standardPath),
	}}
	table, err := newImageTableWithPaddle("", map[string]ImageEntry{"paddlepaddle/paddle": {PaddleRelease: paddleReleaseByTag}}, rts)
	if err != nil {
		t.Fatal(err)
	}
	src := newImageSource(table, installPaddleRuntime(logr.Discard()), nil)
	start := time.Now()
	first, started, err := src.pull("2.6.2")
	if err != nil || !started {
		t.Fatalf("pull: started %v, %v", started, err)
	}
	second, startedAgain, err := src.pull("2.6.2")
	if err != nil || startedAgain || second != first {
		t.Fatalf("a second pull during the first started another install (%v) or failed (%v)", startedAgain, err)
	}
	select {
	case <-first.done:
	case <-time.After(10 * time.Minute):
		t.Fatal("the install did not end in 10 minutes")
	}
	if first.err != nil {
		t.Fatal(first.err)
	}
	t.Logf("installed Paddle 2.6.2 in %s", time.Since(start).Round(time.Second))

	entry, _ := src.current().Lookup("paddlepaddle/paddle:2.6.2")
	if r := src.current().pendingPaddle(entry); r != "" {
		t.Fatalf("%s is still pending", r)
	}
	if len(entry.HostPaths) == 0 || !strings.HasPrefix(entry.HostPaths[0], cache) {
		t.Errorf("host paths %q; want the venv in the cache %s first", entry.HostPaths, cache)
	}
	bin, _, _ := strings.Cut(entry.Env["PATH"], ":")
	out, err := exec.Command(filepath.Join(bin, "python3"), "-c", "import paddle; print(paddle.__version__)").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "2.6.2" {
		t.Errorf("import paddle with the image's PATH: %v: %s", err, out)
	}
}
