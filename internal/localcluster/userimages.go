package localcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/paddlejob/paddlejob/internal/fsutil"
	"github.com/paddlejob/paddlejob/internal/localcluster/node"

	"github.com/paddlejob/paddlejob/internal/imageref"
)

// Your own images: `paddlejob run --build-context DIR` has the node run an
// image from a Docker build context, with no image table to write. The node
// reads its table, and the Dockerfiles of its contexts, when it starts: an
// image it does not know yet, or whose Dockerfile changed, is added to the
// table and the node restarted. The other files of a context are read when
// each container starts, so editing the program needs no restart. A restart
// would start the pods running on the node again from the beginning, so it
// is refused while any runs.
//
// A context's output/ is where its jobs keep what they write (paddlejob
// init's jobs mount it through hostPath volumes): the cluster's owner named
// the context, so its nodes let pods write there, as they do in the
// --host-path-rw directories, and nowhere else in it. The table records
// each context's output/ by its real path, read when the node starts.

// userImage is an image added to the running cluster's table.
type userImage struct {
	Context string `json:"context"`
	// Dockerfile is the SHA-256 of the Dockerfile the node read.
	Dockerfile string `json:"dockerfile"`
	// Output is the context's output/ by its real path: pods may write
	// there.
	Output string `json:"output,omitempty"`
}

func (l layout) userImages() string { return filepath.Join(l.home, "user-images.json") }

// AddedImage says what AddImages did with an image.
type AddedImage struct {
	Image, Context string
	// New is true when the node did not run the image from this context
	// with this Dockerfile before.
	New bool
	// Output is the context's output/ directory, which pods may write to
	// (while it is a directory).
	Output string
	// Imported: the image was built from the context and imported into
	// the container-runtime nodes' containerd (they run no image table).
	Imported bool
}

// AddImages makes the running local cluster in home run each image
// (reference → build context directory) from its context. When one is new
// or its Dockerfile changed, the node restarts to read it, which is refused
// while pods run on it. Dockerfile errors are reported before anything
// changes.
func AddImages(ctx context.Context, home string, images map[string]string) ([]AddedImage, error) {
	opts := Options{Home: home}
	if err := opts.complete(); err != nil {
		return nil, err
	}
	l := layout{opts.Home}
	unlock, err := fsutil.Lock(l.lockFile())
	if err != nil {
		return nil, err
	}
	defer unlock()
	st, err := readState(l)
	if err != nil {
		return nil, fmt.Errorf("%w in %s: start it with paddlejob up", errNotRunning, l.home)
	}
	known := map[string]userImage{}
	if data, err := os.ReadFile(l.userImages()); err == nil {
		if err := json.Unmarshal(data, &known); err != nil {
			return nil, fmt.Errorf("reading %s: %w", l.userImages(), err)
		}
	}
	var added []AddedImage
	changed := false
	for _, image := range slices.Sorted(maps.Keys(images)) {
		dir, err := filepath.Abs(images[image])
		if err != nil {
			return nil, err
		}
		data, err := os.ReadFile(filepath.Join(dir, "Dockerfile"))
		if err != nil {
			return nil, fmt.Errorf("build context of %s: %w (a build context is a directory holding a Dockerfile)", image, err)
		}
		sum := sha256.Sum256(data)
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return nil, err
		}
		u := userImage{Context: dir, Dockerfile: hex.EncodeToString(sum[:]), Output: filepath.Join(real, "output")}
		isNew := known[image] != u
		added = append(added, AddedImage{Image: image, Context: dir, New: isNew, Output: u.Output})
		if isNew {
			known[image] = u
			changed = true
		}
	}
	if st.Settings.nodeRuntime() == NodeRuntimeContainerd {
		return added, importIntoRuntimeNodes(ctx, l, st, known, added)
	}
	if !changed {
		return added, nil
	}

	next, err := nextImageTable(l, known, added)
	if err != nil {
		return nil, err
	}
	defer os.Remove(next)

	cs, err := clusterClient(st)
	if err != nil {
		return nil, err
	}
	if err := noPodsRunning(ctx, cs); err != nil {
		return nil, err
	}
	if err := os.Rename(next, l.imageTable()); err != nil {
		return nil, err
	}
	if err := writeUserImages(l, known); err != nil {
		return nil, err
	}
	return added, restartNodes(ctx, st, cs)
}

// writeUserImages records the images added to the cluster.
func writeUserImages(l layout, known map[string]userImage) error {
	record, err := json.MarshalIndent(known, "", "  ")
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(l.userImages(), record, 0o644)
}

// nextImageTable writes the node's image table with the added images
// beside the current one (the caller renames it into place, or removes
// it), checked as the node will read it.
func nextImageTable(l layout, known map[string]userImage, added []AddedImage) (string, error) {
	table, err := os.ReadFile(l.imageTable())
	if err != nil {
		return "", fmt.Errorf("reading the node's image table: %w", err)
	}
	var file node.ImageTableFile
	if err := yaml.UnmarshalStrict(table, &file); err != nil {
		return "", fmt.Errorf("the node's image table %s: %w", l.imageTable(), err)
	}
	for _, a := range added {
		// The table's own images (the Paddle runtime, the examples) stay:
		// other images build on them.
		for key := range file.Images {
			if _, mine := known[key]; !mine && sameImage(key, a.Image) {
				return "", fmt.Errorf("%s is an image the local cluster provides itself (its image table has %s): give your image a name of its own", a.Image, key)
			}
		}
		file.Images[a.Image] = node.ImageEntry{Context: a.Context}
	}
	for _, u := range known {
		if u.Output != "" && !slices.Contains(file.BuildContextOutputs, u.Output) {
			file.BuildContextOutputs = append(file.BuildContextOutputs, u.Output)
		}
	}
	slices.Sort(file.BuildContextOutputs)
	data, err := yaml.Marshal(file)
	if err != nil {
		return "", err
	}
	next := l.imageTable() + ".next"
	if err := os.WriteFile(next, data, 0o644); err != nil {
		os.Remove(next)
		return "", err
	}
	if _, err := node.LoadImageTable(next); err != nil {
		os.Remove(next)
		var names []string
		for _, a := range added {
			names = append(names, a.Image+" ("+a.Context+")")
		}
		return "", fmt.Errorf("the local node cannot run %s: %w", strings.Join(names, ", "), err)
	}
	return next, nil
}

// sameImage reports whether two image references name one image, as the
// node reads them (internal/imageref): Docker Hub's prefixes are dropped,
// and a name without a tag stands for every tag.
func sameImage(a, b string) bool {
	if imageref.Familiar(a) == imageref.Familiar(b) {
		return true
	}
	nameA, _ := imageref.NameAndTag(a)
	nameB, _ := imageref.NameAndTag(b)
	// A bare name in the table covers every tag of the image.
	return nameA == nameB && (!imageref.HasTag(a) || !imageref.HasTag(b))
}

// clusterClient is a clientset of the cluster's admin kubeconfig.
func clusterClient(st *State) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", st.Kubeconfig())
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// noPodsRunning refuses a node restart that would start pods again.
func noPodsRunning(ctx context.Context, cs kubernetes.Interface) error {
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the nodes' pods: %w", err)
	}
	var running []string
	for _, p := range pods.Items {
		if isNode(p.Spec.NodeName) && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			running = append(running, p.Namespace+"/"+p.Name)
		}
	}
	if len(running) == 0 {
		return nil
	}
	slices.Sort(running)
	if len(running) > 5 {
		running = append(running[:5], fmt.Sprintf("and %d more", len(running)-5))
	}
	return fmt.Errorf("the local nodes read a new image's Dockerfile when they start, and restarting them now would start the pods they run again from the beginning: %s; "+
		"run again once they have finished (or delete their jobs). Changes to a context's other files need no restart",
		strings.Join(running, ", "))
}

// restartNodes restarts every node, one after the other (restartNode).
func restartNodes(ctx context.Context, st *State, cs kubernetes.Interface) error {
	for i := range st.Settings.nodes() {
		if err := restartNode(ctx, st, cs, i); err != nil {
			return err
		}
	}
	return nil
}

// restartNode stops node i's process, which its supervisor starts again at
// once (a requested restart: no crash back-off), and waits until the new
// one serves and its Node is Ready.
func restartNode(ctx context.Context, st *State, cs kubernetes.Interface, i int) error {
	name := nodeName(i)
	var p *process
	for _, proc := range st.Processes {
		if proc.Name == name {
			p = proc
		}
	}
	if p == nil || i >= len(st.Ports.Kubelets) {
		return fmt.Errorf("the local cluster's state names no node %s", name)
	}
	old := p.supervised().PID
	if old == 0 {
		return fmt.Errorf("the local node %s is not running: see paddlejob status", name)
	}
	// Asked for, not a crash: its supervisor starts it again at once.
	if err := requestRestart(p.Status, old); err != nil {
		return fmt.Errorf("restarting the local node %s (pid %d): %w", name, old, err)
	}
	err := waitFor(ctx, 2*time.Minute, func() error {
		if pid := p.supervised().PID; pid == 0 || pid == old {
			return errors.New("the node has not restarted yet")
		}
		if err := dialTLS(st.Ports.Kubelets[i]); err != nil {
			return err
		}
		return nodeReadyWith(ctx, cs, name)
	})
	if err != nil {
		return fmt.Errorf("restarting the local node %s to read the new image table: %w (its log: %s)", name, err, p.Log)
	}
	return nil
}
