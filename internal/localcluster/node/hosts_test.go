package node

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const localhostLines = `# Kubernetes-managed hosts file (paddlejob node).
127.0.0.1	localhost
::1	localhost ip6-localhost ip6-loopback
fe00::0	ip6-localnet
fe00::0	ip6-mcastprefix
fe00::1	ip6-allnodes
fe00::2	ip6-allrouters
`

func TestHostsFileContent(t *testing.T) {
	tests := []struct {
		name    string
		self    hostEntry
		aliases []corev1.HostAlias
		want    string
	}{
		{
			name: "no subdomain",
			self: hostEntry{IP: "10.244.0.100", Hostname: "solo", Namespace: "ml"},
			want: localhostLines + "10.244.0.100\tsolo\n",
		},
		{
			// Its peers are the cluster DNS server's to resolve.
			name: "subdomain",
			self: hostEntry{IP: "10.244.0.101", Hostname: "job-worker-1", Subdomain: "job", Namespace: "ml"},
			want: localhostLines + "10.244.0.101\tjob-worker-1.job.ml.svc.cluster.local job-worker-1.job job-worker-1\n",
		},
		{
			// A hostNetwork pod has the node's address and hostname.
			name: "hostNetwork pod",
			self: hostEntry{IP: "172.18.0.2", Hostname: "job-ps-0", Subdomain: "job", Namespace: "ml", UTSName: "machine"},
			want: localhostLines + "172.18.0.2\tjob-ps-0.job.ml.svc.cluster.local job-ps-0.job job-ps-0 machine\n",
		},
		{
			name:    "host aliases",
			self:    hostEntry{IP: "10.244.0.100", Hostname: "a", Namespace: "ml"},
			aliases: []corev1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"db", "db.local"}}},
			want:    localhostLines + "10.244.0.100\ta\n# Entries added by HostAliases.\n10.1.2.3\tdb\tdb.local\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(hostsFileContent(tc.self, tc.aliases)); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}
