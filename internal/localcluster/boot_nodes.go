package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/internal/localcluster/node"
)

// The boot steps of the cluster's network and its nodes.

// startNetwork starts the cluster network, which the nodes attach to.
func (b *boot) startNetwork(ctx context.Context) error {
	args := []string{b.opts.Executable, "cluster-network",
		"--socket=" + networkSocket(b.l),
		"--egress-socket=" + egressSocket(b.l),
		"--nodes-cidr=" + nodesCIDR, "--pod-cidr=" + podCIDR, "--service-cidr=" + serviceCIDR,
	}
	for i, port := range b.st.Ports.Kubelets {
		ip, pods := nodeAddress(i)
		n := fmt.Sprintf("--node=%s,%s,%d", ip, pods, port)
		if b.runtimeNodes() {
			n += ",kubelet-in-node"
		}
		args = append(args, n)
	}
	args = append(args, forwards(b.st.Ports)...)
	return b.launch(ctx, componentNetwork, args, nil, 30*time.Second, func() error {
		_, err := os.Stat(networkSocket(b.l))
		return err
	})
}

// nodesStep names the step that starts the nodes.
func nodesStep(n int) string {
	if n == 1 {
		return componentNode
	}
	return fmt.Sprintf("%d nodes", n)
}

// startNodes starts every node, then waits for them all to be Ready.
func (b *boot) startNodes(ctx context.Context) error {
	if err := writeImageTable(b.l, b.opts.Executable, b.paddle, b.opts.ImageTable); err != nil {
		return err
	}
	cfg, err := kube.LoadConfig(b.l.kubeconfig(), "")
	if err != nil {
		return err
	}
	var runtimeImages []string
	if b.runtimeNodes() {
		if runtimeImages, err = b.buildRuntimeNodeImages(); err != nil {
			return err
		}
	}
	var started []*process
	for i := range b.opts.Nodes {
		args := b.nodeArgs(i)
		if b.runtimeNodes() {
			if args, err = b.runtimeNodeArgs(i, runtimeImages); err != nil {
				return err
			}
		}
		p, err := startProcess(b.opts.Executable, nodeName(i), args, nil, b.l.logs())
		if err != nil {
			return err
		}
		b.st.Processes = append(b.st.Processes, p)
		started = append(started, p)
	}
	for i, p := range started {
		err := waitFor(ctx, 90*time.Second, func() error {
			if !p.alive() || p.supervised().Restarts > 0 {
				return stopWaiting(fmt.Errorf("%s exited:\n%s", p.Name, tailFile(p.Log, 15)))
			}
			return nodeReady(ctx, cfg, nodeName(i))
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// nodeArgs is node i's command.
func (b *boot) nodeArgs(i int) []string {
	pki := b.l.pki()
	ip, pods := nodeAddress(i)
	name := nodeName(i)
	return []string{b.opts.Executable, "node",
		"--kubeconfig=" + b.l.componentConfig(componentNode),
		"--node-name=" + name,
		"--state-dir=" + b.l.nodeState(name),
		// Keys, kubeconfigs, etcd: nothing of the cluster's state is a pod's.
		"--hide=" + b.l.home,
		// The user's kubeconfigs hold the admin credentials too.
		"--hide-file=" + strings.Join(b.opts.KubeconfigFiles(), ","),
		// A pod mounts of the host what the user listed, and nothing else.
		"--host-path-ro=" + strings.Join(b.opts.HostPathRO, ","),
		"--host-path-rw=" + strings.Join(b.opts.HostPathRW, ","),
		"--node-ip=" + ip,
		"--nodes-cidr=" + nodesCIDR,
		"--pod-cidr=" + pods,
		"--cluster-pod-cidr=" + podCIDR,
		"--service-cidr=" + serviceCIDR,
		"--kubelet-port=" + itoa(b.st.Ports.Kubelets[i]),
		"--tls-cert-file=" + filepath.Join(pki, "kubelet-serving.crt"),
		"--tls-private-key-file=" + filepath.Join(pki, "kubelet-serving.key"),
		"--client-ca-file=" + b.ca.CertFile,
		"--image-table=" + b.l.imageTable(),
		// The host's CPUs and memory, unless told to advertise more.
		"--capacity=" + capacityArg(b.opts.Capacity, b.opts.GPUs),
		"--node-labels=" + formatLabels(b.opts.NodeLabels),
		// Every pod's limits and sizes (docs/local-node.md#isolation).
		"--pod-pids-limit=" + itoa(node.DefaultPodPidsLimit),
		"--tmp-size=" + itoa(node.DefaultTmpSize),
		"--shm-size=" + itoa(node.DefaultShmSize),
		// The other nodes and the host's forwards are behind the cluster
		// network (network.go); pods reach the API server at its forward.
		"--cluster-network=" + networkSocket(b.l),
		"--pod-api-server=" + onHost("https", b.st.Ports.APIServer),
		// The cluster's DNS server, on the kube-dns address (clusterdns.go).
		"--cluster-dns=" + clusterDNSIP,
		"--cluster-dns-server=" + filepath.Join(b.clusterDNS, "coredns"),
		"--cluster-dns-kubeconfig=" + b.l.componentConfig(componentClusterDNS),
	}
}
