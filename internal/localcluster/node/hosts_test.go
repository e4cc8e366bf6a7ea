package node

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
	worker := func(i, ip string) hostEntry {
		return hostEntry{IP: ip, Hostname: "job-worker-" + i, Subdomain: "job", Namespace: "ml"}
	}
	tests := []struct {
		name    string
		self    hostEntry
		peers   []hostEntry
		aliases []corev1.HostAlias
		want    string
	}{
		{
			name: "no subdomain",
			self: hostEntry{IP: "127.0.1.1", Hostname: "solo", Namespace: "ml"},
			want: localhostLines + "127.0.1.1\tsolo\n",
		},
		{
			name:  "subdomain with peers, sorted",
			self:  worker("1", "127.0.1.2"),
			peers: []hostEntry{worker("2", "127.0.1.3"), worker("0", "127.0.1.1")},
			want: localhostLines +
				"127.0.1.2\tjob-worker-1.job.ml.svc.cluster.local job-worker-1.job job-worker-1\n" +
				"# Pods of subdomain job.\n" +
				"127.0.1.1\tjob-worker-0.job.ml.svc.cluster.local job-worker-0.job job-worker-0\n" +
				"127.0.1.3\tjob-worker-2.job.ml.svc.cluster.local job-worker-2.job job-worker-2\n",
		},
		{
			// A headless Service names hostNetwork pods too, at the node's
			// address; the pod's own hostname is the node's.
			name:  "hostNetwork pods on one node",
			self:  hostEntry{IP: "127.0.0.1", Hostname: "job-ps-0", Subdomain: "job", Namespace: "ml", UTSName: "machine"},
			peers: []hostEntry{{IP: "127.0.0.1", Hostname: "job-worker-0", Subdomain: "job", Namespace: "ml", UTSName: "machine"}},
			want: localhostLines +
				"127.0.0.1\tjob-ps-0.job.ml.svc.cluster.local job-ps-0.job job-ps-0 machine\n" +
				"# Pods of subdomain job.\n" +
				"127.0.0.1\tjob-worker-0.job.ml.svc.cluster.local job-worker-0.job job-worker-0\n",
		},
		{
			name:    "host aliases",
			self:    hostEntry{IP: "127.0.1.1", Hostname: "a", Namespace: "ml"},
			aliases: []corev1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"db", "db.local"}}},
			want:    localhostLines + "127.0.1.1\ta\n# Entries added by HostAliases.\n10.1.2.3\tdb\tdb.local\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(hostsFileContent(tc.self, tc.peers, tc.aliases)); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestWriteFileInPlaceKeepsTheInode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	inode := func() uint64 {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Sys().(*syscall.Stat_t).Ino
	}
	steps := []struct {
		content     string
		wantChanged bool
	}{
		{"a long first content\n", true},
		{"a long first content\n", false},
		{"short\n", true},
		{strings.Repeat("longer again\n", 10), true},
	}
	var first uint64
	for i, s := range steps {
		changed, err := writeFileInPlace(path, []byte(s.content))
		if err != nil {
			t.Fatal(err)
		}
		if changed != s.wantChanged {
			t.Errorf("step %d: changed = %v, want %v", i, changed, s.wantChanged)
		}
		got, _ := os.ReadFile(path)
		if string(got) != s.content {
			t.Errorf("step %d: content %q, want %q", i, got, s.content)
		}
		if i == 0 {
			first = inode()
		} else if inode() != first {
			t.Errorf("step %d: the file was replaced, not rewritten", i)
		}
	}
}
