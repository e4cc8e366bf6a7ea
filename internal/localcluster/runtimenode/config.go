package runtimenode

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"

	"github.com/paddlejob/paddlejob/internal/localcluster/podnetwork"
)

// The configuration files of the node's containerd, CNI and kubelet, each
// a pure function of Config so that a test reads what a node would run.

// containerdConfig is containerd's config.toml (version 3): its state under
// the node's directory, runc by path, the pinned sandbox image (imported,
// never pulled) and the CNI configuration beside it.
func containerdConfig(c Config) string {
	var b strings.Builder
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	fmt.Fprintf(&b, "version = 3\nroot = %s\nstate = %s\n\n", q(c.containerdRoot()), q(c.containerdState()))
	fmt.Fprintf(&b, "[grpc]\n  address = %s\n\n", q(c.ContainerdSocket()))
	fmt.Fprintf(&b, "[ttrpc]\n  address = %s\n\n", q(c.containerdState()+"/ttrpc.sock"))
	// Nothing of the host's: no metrics or debug listener.
	b.WriteString("[plugins]\n")
	fmt.Fprintf(&b, "  [plugins.'io.containerd.cri.v1.images']\n    snapshotter = 'overlayfs'\n")
	fmt.Fprintf(&b, "    [plugins.'io.containerd.cri.v1.images'.pinned_images]\n      sandbox = %s\n", q(SandboxImage))
	fmt.Fprintf(&b, "  [plugins.'io.containerd.cri.v1.runtime']\n")
	// The machine's root here may lack CAP_SYS_RESOURCE: no pod is given a
	// lower OOM score adjustment than containerd's own.
	b.WriteString("    restrict_oom_score_adj = true\n")
	fmt.Fprintf(&b, "    [plugins.'io.containerd.cri.v1.runtime'.cni]\n      bin_dirs = [%s]\n      conf_dir = %s\n", q(c.Runtime.CNIBin), q(c.cniConfDir()))
	b.WriteString("    [plugins.'io.containerd.cri.v1.runtime'.containerd]\n      default_runtime_name = 'runc'\n")
	b.WriteString("      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\n        runtime_type = 'io.containerd.runc.v2'\n")
	fmt.Fprintf(&b, "        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\n          BinaryName = %s\n          Root = %s\n          SystemdCgroup = false\n", q(c.Runtime.Binary("runc")), q(c.containerdState()+"/runc"))
	return b.String()
}

// cniConfig is the pod network's CNI configuration list: the bridge plugin
// on the node network's own bridge (podnetwork.BridgeName, which holds the
// pods' gateway), addresses from this node's pod CIDR whose last octet is
// 100-254 as the process node gives them, and the loopback.
func cniConfig(c Config) ([]byte, error) {
	prefix := c.Network.PodCIDR.Masked()
	start, end := lastOctet(prefix, 100), lastOctet(prefix, 254)
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "paddlejob",
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": podnetwork.BridgeName, "isGateway": true, "ipMasq": false,
				"hairpinMode": true, "mtu": podnetwork.UplinkMTU,
				"ipam": map[string]any{
					"type": "host-local", "dataDir": filepath.Join(c.StateDir, "cni", "networks"),
					"ranges": [][]map[string]string{{{
						"subnet": prefix.String(), "rangeStart": start.String(), "rangeEnd": end.String(),
						"gateway": podnetwork.Gateway(prefix).String(),
					}}},
					"routes": []map[string]string{{"dst": "0.0.0.0/0"}},
				},
			},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// lastOctet is the address of prefix whose last octet is n (a /24 or
// shorter prefix: the node's pod CIDR).
func lastOctet(prefix netip.Prefix, n byte) netip.Addr {
	a := prefix.Masked().Addr().As4()
	a[3] = n
	return netip.AddrFrom4(a)
}

// kubeletConfig is the kubelet's KubeletConfiguration. The API server is
// its only client: x509 against the cluster CA, as the process node's
// kubelet API admits it.
func kubeletConfig(c Config) ([]byte, error) {
	conf := map[string]any{
		"apiVersion":        "kubelet.config.k8s.io/v1beta1",
		"kind":              "KubeletConfiguration",
		"address":           c.Network.NodeIP.String(),
		"port":              c.KubeletPort,
		"readOnlyPort":      0,
		"healthzPort":       0,
		"tlsCertFile":       c.TLSCertFile,
		"tlsPrivateKeyFile": c.TLSKeyFile,
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": false},
			"x509":      map[string]any{"clientCAFile": c.ClientCAFile},
		},
		"authorization":            map[string]any{"mode": "AlwaysAllow"},
		"containerRuntimeEndpoint": "unix://" + c.ContainerdSocket(),
		// The machine's cgroups are v1 or v2, and their driver is
		// cgroupfs: no systemd manages this node.
		"cgroupDriver":  "cgroupfs",
		"cgroupRoot":    c.CgroupRoot,
		"failCgroupV1":  false,
		"failSwapOn":    false,
		"clusterDNS":    []string{c.ClusterDNS.IP},
		"clusterDomain": "cluster.local",
		"resolvConf":    "",
		"maxPods":       c.MaxPods,
		"registerNode":  true,
		// The machine's disk and memory are the user's: evict only when
		// they are nearly gone, never for the image GC's thresholds.
		"evictionHard":                map[string]string{"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
		"imageGCHighThresholdPercent": 100,
		"imageGCLowThresholdPercent":  99,
		"serializeImagePulls":         false,
		"staticPodPath":               "",
		"podLogsDir":                  c.podLogsDir(),
		"shutdownGracePeriod":         "0s",
	}
	return json.MarshalIndent(conf, "", "  ")
}
