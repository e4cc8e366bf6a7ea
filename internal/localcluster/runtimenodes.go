package localcluster

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"

	"github.com/paddlejob/paddlejob/examples/images"
	"github.com/paddlejob/paddlejob/internal/imageref"
	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
	"github.com/paddlejob/paddlejob/internal/localcluster/node"
	"github.com/paddlejob/paddlejob/internal/localcluster/podnetwork"
	"github.com/paddlejob/paddlejob/internal/localcluster/runtimenode"
	"github.com/paddlejob/paddlejob/internal/pki"
)

// The container-runtime nodes (--node-runtime=containerd): each the real
// kubelet with containerd, run by `paddlejob runtime-node` in a network
// namespace attached to the cluster network, as a process node is.

// runtimeNodes says whether the cluster's nodes are container-runtime nodes.
func (b *boot) runtimeNodes() bool { return b.opts.NodeRuntime == NodeRuntimeContainerd }

// kubeletIdentity names node i's kubelet credentials under pki/.
func kubeletIdentity(i int) string { return "kubelet-" + nodeName(i) }

// runtimeNodeCredentials issues each kubelet its own identity,
// system:node:<name> in system:nodes, which the API server's Node
// authorizer and NodeRestriction admission scope to its own Node and pods,
// with a kubeconfig naming the API server's forward on the host IP: what
// the node's network namespace reaches.
func (b *boot) runtimeNodeCredentials() error {
	for i := range b.opts.Nodes {
		spec := certSpec{name: kubeletIdentity(i), Spec: pki.Spec{CommonName: "system:node:" + nodeName(i), Organization: []string{"system:nodes"}, Client: true}}
		kp, err := b.ca.issue(b.l.pki(), spec)
		if err != nil {
			return err
		}
		if err := writeKubeconfig(b.l.componentConfig(kubeletIdentity(i)), onHost("https", b.st.Ports.APIServer), b.ca, kp); err != nil {
			return err
		}
	}
	return nil
}

// RuntimeNodeCgroupRoot is the cgroup a container-runtime node makes its
// pods' cgroups under, in every hierarchy: named after the cluster's home
// and the node, so that two clusters never share one.
func RuntimeNodeCgroupRoot(home, node string) string {
	return "/paddlejob-" + filepath.Base(home) + "-" + node
}

// runtimeNodeTags are the tags an example image named without one has on
// the container-runtime node, whose images are exact references (the
// process node answers to every tag): what the examples' manifests name
// (seed 004's :v1, seed 001's [YOUR_REPO]/paddle:mypaddle) and latest. A tag naming a Paddle release of the node's is the image on
// that release (demo-resnet:2.6.2), as on the process node.
var runtimeNodeTags = []string{"v1", "mypaddle", "latest"}

// runtimeNodePaddleAliases are the Paddle images' tags beyond the releases
// and latest, by the release they run: seed 004's example 5 names
// paddle-ubuntu:2.0.0-18.04, which the process node runs on the nearest
// release it pins, 2.6.2.
var runtimeNodePaddleAliases = map[string]string{"2.0.0-18.04": "2.6.2"}

// buildRuntimeNodeImages builds the example images, from the build
// contexts writeImageTable wrote, for the container-runtime nodes, and
// returns every archive they import.
func (b *boot) buildRuntimeNodeImages() ([]string, error) {
	table, err := images.LoadTable()
	if err != nil {
		return nil, err
	}
	contexts, aliases := runtimeNodeImages(table, b.l, b.paddle.Default)
	built, err := runtimenode.BuildContextImages(kubebin.DefaultCacheDir(), b.l.nodesState(), table.PaddleImages, contexts, aliases)
	if err != nil {
		return nil, fmt.Errorf("building the example images for the container-runtime node: %w", err)
	}
	return append(slices.Clone(b.nodeImages), runtimenode.Archives(built)...), nil
}

// runtimeNodeImages are the example images of the container-runtime node:
// each build context of the examples' table under the names it answers to
// (runtimeNodeTags and one per release for a name without a tag), and the
// Paddle images under the table's paddleImages names.
func runtimeNodeImages(table *images.Table, l layout, defaultRelease string) ([]runtimenode.ContextImage, []runtimenode.ImageAlias) {
	launcher := map[string]string{}
	for _, name := range launcherNames {
		launcher[name] = filepath.Join(l.launcherDir(), name)
	}
	var contexts []runtimenode.ContextImage
	for _, name := range table.ContextNames() {
		c := table.Contexts[name]
		dir := filepath.Join(l.imageContexts(), name)
		onFrom := runtimenode.ContextImage{Context: dir}
		if c.Launcher {
			onFrom.Bin = launcher
		}
		perRelease := make([]runtimenode.ContextImage, len(runtimenode.PaddleReleases))
		for _, image := range c.Images {
			if imageref.HasTag(image) {
				onFrom.Names = append(onFrom.Names, image)
				continue
			}
			for _, tag := range runtimeNodeTags {
				onFrom.Names = append(onFrom.Names, image+":"+tag)
			}
			for i, release := range runtimenode.PaddleReleases {
				perRelease[i].Names = append(perRelease[i].Names, image+":"+release)
			}
		}
		contexts = append(contexts, onFrom)
		for i, release := range runtimenode.PaddleReleases {
			if len(perRelease[i].Names) > 0 {
				contexts = append(contexts, runtimenode.ContextImage{Context: dir, Names: perRelease[i].Names, Release: release, Bin: onFrom.Bin})
			}
		}
	}
	var aliases []runtimenode.ImageAlias
	for _, release := range runtimenode.PaddleReleases {
		tags := []string{release}
		if release == defaultRelease {
			tags = append(tags, "latest")
		}
		for _, tag := range slices.Sorted(maps.Keys(runtimeNodePaddleAliases)) {
			if runtimeNodePaddleAliases[tag] == release {
				tags = append(tags, tag)
			}
		}
		a := runtimenode.ImageAlias{Release: release}
		for _, image := range table.PaddleImages {
			for _, tag := range tags {
				a.Names = append(a.Names, image+":"+tag)
			}
		}
		aliases = append(aliases, a)
	}
	return contexts, aliases
}

// runtimeNodeConfigFile is a container-runtime node's configuration, in
// its state directory.
const runtimeNodeConfigFile = "runtime-node.json"

// runtimeNodeArgs writes node i's configuration and returns its command.
func (b *boot) runtimeNodeArgs(i int, images []string) ([]string, error) {
	name := nodeName(i)
	ip, pods := nodeAddress(i)
	cfg := runtimenode.Config{
		Name:       name,
		Kubeconfig: b.l.componentConfig(kubeletIdentity(i)),
		StateDir:   b.l.nodeState(name),
		Network: podnetwork.NodeConfig{
			PodCIDR:        netip.MustParsePrefix(pods),
			ClusterPodCIDR: netip.MustParsePrefix(podCIDR),
			NodeIP:         netip.MustParseAddr(ip),
			NodesCIDR:      netip.MustParsePrefix(nodesCIDR),
			ServiceCIDRs:   []netip.Prefix{netip.MustParsePrefix(serviceCIDR)},
		},
		KubeletPort:          b.st.Ports.Kubelets[i],
		TLSCertFile:          filepath.Join(b.l.pki(), "kubelet-serving.crt"),
		TLSKeyFile:           filepath.Join(b.l.pki(), "kubelet-serving.key"),
		ClientCAFile:         b.ca.CertFile,
		ClusterNetworkSocket: networkSocket(b.l),
		ClusterDNS: node.ClusterDNS{Binary: filepath.Join(b.clusterDNS, "coredns"), IP: clusterDNSIP,
			Kubeconfig: b.l.componentConfig(componentClusterDNS)},
		ServicesKubeconfig: b.l.componentConfig(componentNode),
		Runtime:            b.nodeRuntime,
		Images:             images,
		CgroupRoot:         "/paddlejob-" + filepath.Base(b.l.home) + "-" + name,
		MaxPods:            110,
		NodeLabels:         formatLabels(b.opts.NodeLabels),
		GPUs:               b.opts.GPUs,
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	file := filepath.Join(cfg.StateDir, runtimeNodeConfigFile)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		return nil, fmt.Errorf("writing %s's configuration: %w", name, err)
	}
	return []string{b.opts.Executable, "runtime-node", "--config=" + file}, nil
}

// runtimeNodeUserNamespaces is the admission policy that runs the
// container-runtime node's pods in user namespaces of their own.
//
//go:embed runtime-node-userns.yaml
var runtimeNodeUserNamespaces string

// runtimeNodeAPIServerFlags turn on MutatingAdmissionPolicy, beta and off by
// default in Kubernetes 1.35, for runtimeNodeUserNamespaces.
func (b *boot) runtimeNodeAPIServerFlags() []string {
	if !b.runtimeNodes() {
		return nil
	}
	return []string{"--feature-gates=MutatingAdmissionPolicy=true", "--runtime-config=admissionregistration.k8s.io/v1beta1=true"}
}

// cleanUpRuntimeNodes removes what killed container-runtime nodes left on
// the machine (their pods, shims, mounts and cgroups): Down runs it once
// every process is stopped, before it removes the home.
func cleanUpRuntimeNodes(l layout) {
	configs, _ := filepath.Glob(filepath.Join(l.nodesState(), "*", runtimeNodeConfigFile))
	for _, file := range configs {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		var cfg runtimenode.Config
		if json.Unmarshal(data, &cfg) == nil && cfg.StateDir != "" {
			runtimenode.CleanUp(cfg)
		}
	}
}
