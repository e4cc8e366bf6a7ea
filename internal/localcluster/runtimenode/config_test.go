package runtimenode

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
	"github.com/paddlejob/paddlejob/internal/localcluster/node"
	"github.com/paddlejob/paddlejob/internal/localcluster/podnetwork"
)

func testConfig() Config {
	return Config{
		Name: "paddlejob-node-2", StateDir: "/home/u/.paddlejob/nodes/paddlejob-node-2",
		Network: podnetwork.NodeConfig{
			PodCIDR: netip.MustParsePrefix("10.244.16.0/20"), ClusterPodCIDR: netip.MustParsePrefix("10.244.0.0/16"),
			NodeIP: netip.MustParseAddr("172.18.0.3"), NodesCIDR: netip.MustParsePrefix("172.18.0.0/16"),
		},
		KubeletPort: 41234, ClusterDNS: node.ClusterDNS{IP: "10.96.0.10"}, CgroupRoot: "/paddlejob-x-paddlejob-node-2",
		Runtime: kubebin.NodeRuntime{Bin: []string{"/cache/containerd", "/cache/runc"}, CNIBin: "/cache/cni"},
	}
}

// TestCNIConfigGivesThePodsTheProcessNodesAddresses: the bridge is the
// node network's, pods get last octets 100-254 of the node's pod CIDR and
// the gateway is its first address, as on the process node.
func TestCNIConfigGivesThePodsTheProcessNodesAddresses(t *testing.T) {
	data, err := cniConfig(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Plugins []struct {
			Type, Bridge string
			IPAM         struct {
				Ranges [][]map[string]string
			}
		}
	}
	if err := json.Unmarshal(data, &conf); err != nil {
		t.Fatal(err)
	}
	p := conf.Plugins[0]
	r := p.IPAM.Ranges[0][0]
	if p.Type != "bridge" || p.Bridge != podnetwork.BridgeName || r["subnet"] != "10.244.16.0/20" ||
		r["rangeStart"] != "10.244.16.100" || r["rangeEnd"] != "10.244.16.254" || r["gateway"] != "10.244.16.1" {
		t.Errorf("CNI configuration:\n%s", data)
	}
}

// TestKubeletConfigListensOnTheNodeIPOnly: the kubelet API on the node IP
// and its port, no read-only or healthz port, x509 clients only, the
// cluster DNS, the cgroup root and containerd's socket.
func TestKubeletConfigListensOnTheNodeIPOnly(t *testing.T) {
	c := testConfig()
	data, err := kubeletConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	var conf map[string]any
	if err := json.Unmarshal(data, &conf); err != nil {
		t.Fatal(err)
	}
	auth := conf["authentication"].(map[string]any)
	for key, want := range map[string]any{
		"address": "172.18.0.3", "port": float64(41234), "readOnlyPort": float64(0), "healthzPort": float64(0),
		"cgroupRoot": c.CgroupRoot, "containerRuntimeEndpoint": "unix://" + c.ContainerdSocket(),
	} {
		if conf[key] != want {
			t.Errorf("%s: %v, want %v", key, conf[key], want)
		}
	}
	if auth["anonymous"].(map[string]any)["enabled"] != false || conf["clusterDNS"].([]any)[0] != "10.96.0.10" {
		t.Errorf("kubelet configuration:\n%s", data)
	}
}

// TestContainerdStateIsShortAndTheNodesOwn: containerd's sockets fit a
// Unix socket path whatever the home, and two nodes never share them.
func TestContainerdStateIsShortAndTheNodesOwn(t *testing.T) {
	a, b := testConfig(), testConfig()
	b.StateDir = strings.Replace(b.StateDir, "node-2", "node-3", 1)
	if a.containerdState() == b.containerdState() {
		t.Errorf("two nodes share %s", a.containerdState())
	}
	if shim := a.containerdState() + "/s/" + strings.Repeat("0", 64); len(shim) > 107 {
		t.Errorf("a shim's socket %s is %d bytes long", shim, len(shim))
	}
	conf := containerdConfig(a)
	for _, want := range []string{"address = \"" + a.ContainerdSocket() + "\"", "sandbox = \"" + SandboxImage + "\"", "conf_dir = \"" + a.cniConfDir() + "\""} {
		if !strings.Contains(conf, want) {
			t.Errorf("containerd's configuration lacks %s:\n%s", want, conf)
		}
	}
}
