package localcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"sigs.k8s.io/yaml"

	"github.com/paddlejob/paddlejob/examples/images"
	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
	"github.com/paddlejob/paddlejob/internal/localcluster/node"
	"github.com/paddlejob/paddlejob/internal/localcluster/runtimenode"
)

// On the container-runtime nodes a user's build context is an image like
// the examples' (runtimeNodeImages): each run builds it again from the
// context's files and imports it into every node's containerd under the
// job's name for it, so the new pods run what the context holds now, with
// no node restart. Its pods may mount the context read-only (its data/)
// and its output/ read-write: the host-path policy is written again with
// every context the cluster has run.

// userImagesDir holds the archives of the users' images.
func (l layout) userImagesDir() string { return filepath.Join(l.home, "user-images") }

// importIntoRuntimeNodes is AddImages on container-runtime nodes: the same
// checks as the process node's (a name of its own, a Dockerfile the node's
// reader takes), then the images built and imported, every time.
func importIntoRuntimeNodes(ctx context.Context, l layout, st *State, known map[string]userImage, added []AddedImage) error {
	next, err := nextImageTable(l, known, added)
	if err != nil {
		return err
	}
	os.Remove(next)
	if err := addRuntimeNodeImages(ctx, l, st, known, added); err != nil {
		return err
	}
	for i := range added {
		added[i].Imported = true
	}
	return writeUserImages(l, known)
}

// addRuntimeNodeImages builds the added images and imports them into every
// node's containerd, after the host-path policy lets their pods mount their
// contexts (known: every context the cluster has run).
func addRuntimeNodeImages(ctx context.Context, l layout, st *State, known map[string]userImage, added []AddedImage) error {
	table, err := images.LoadTable()
	if err != nil {
		return err
	}
	defaultRelease, err := defaultPaddleRelease(l)
	if err != nil {
		return err
	}
	// The examples too: a user's Dockerfile may start FROM one.
	contexts, _ := runtimeNodeImages(table, l, defaultRelease)
	var names []string
	for _, a := range added {
		contexts = append(contexts, runtimenode.ContextImage{Context: a.Context, Names: []string{a.Image}})
		names = append(names, a.Image)
	}
	built, err := runtimenode.BuildContextImages(kubebin.DefaultCacheDir(), l.userImagesDir(), table.PaddleImages, contexts, nil)
	if err != nil {
		return err
	}
	var archives []string
	for _, b := range built {
		if slices.ContainsFunc(b.Names, func(n string) bool { return slices.ContainsFunc(names, func(a string) bool { return sameImage(a, n) }) }) {
			archives = append(archives, b.Archive)
		}
	}

	if st.HostPaths == nil {
		return fmt.Errorf("the local cluster in %s was started before its nodes' host-path policy was recorded: start it again (paddlejob down, paddlejob up)", l.home)
	}
	dirs := *st.HostPaths
	var contextDirs, outputs []string
	for _, u := range known {
		contextDirs = append(contextDirs, u.Context)
		if real, err := filepath.EvalSymlinks(u.Context); err == nil {
			contextDirs = append(contextDirs, real)
		}
		if u.Output != "" {
			outputs = append(outputs, u.Output)
		}
	}
	slices.Sort(contextDirs)
	slices.Sort(outputs)
	for _, d := range contextDirs {
		dirs.ReadOnly = appendNew(dirs.ReadOnly, d)
	}
	for _, d := range outputs {
		dirs.ReadWrite = appendNew(dirs.ReadWrite, d)
	}
	if err := applyManifests(ctx, st, dirs.policy()); err != nil {
		return fmt.Errorf("letting the build contexts' pods mount them: %w", err)
	}

	for i := range st.Settings.nodes() {
		cfg, err := readRuntimeNodeConfig(l, nodeName(i))
		if err != nil {
			return err
		}
		if err := cfg.ImportImages(ctx, archives); err != nil {
			return fmt.Errorf("node %s: %w", cfg.Name, err)
		}
	}
	return nil
}

// defaultPaddleRelease is the release of Paddle images naming none, as the
// cluster's image table says.
func defaultPaddleRelease(l layout) (string, error) {
	data, err := os.ReadFile(l.imageTable())
	if err != nil {
		return "", err
	}
	var file node.ImageTableFile
	if err := yaml.Unmarshal(data, &file); err != nil || file.Paddle == nil {
		return "", fmt.Errorf("the node's image table %s names no default Paddle release (%v)", l.imageTable(), err)
	}
	return file.Paddle.Default, nil
}

// readRuntimeNodeConfig reads the configuration up wrote for a node.
func readRuntimeNodeConfig(l layout, name string) (runtimenode.Config, error) {
	var cfg runtimenode.Config
	data, err := os.ReadFile(filepath.Join(l.nodeState(name), runtimeNodeConfigFile))
	if err != nil {
		return cfg, fmt.Errorf("the container-runtime node %s's configuration: %w", name, err)
	}
	return cfg, json.Unmarshal(data, &cfg)
}

// applyManifests applies YAML manifests to the cluster as its admin.
func applyManifests(ctx context.Context, st *State, manifests string) error {
	cfg, err := kube.LoadConfig(st.Kubeconfig(), "")
	if err != nil {
		return err
	}
	objs, err := kube.DecodeManifests([]byte(manifests))
	if err != nil {
		return err
	}
	return applyAll(ctx, cfg, objs)
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
