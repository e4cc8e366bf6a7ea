package node

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// clusterDomain is the DNS domain of Service and pod names.
const clusterDomain = "cluster.local"

// hostEntry is a pod as its /etc/hosts and its peers' name it.
type hostEntry struct {
	IP, Hostname, Subdomain, Namespace string
}

// names are the names that resolve to the pod, canonical name first. A pod
// with a subdomain is also <hostname>.<subdomain>: the name a headless Service
// gives it in DNS, which this node stands in for with hosts files.
func (e hostEntry) names() []string {
	if e.Subdomain == "" {
		return []string{e.Hostname}
	}
	short := e.Hostname + "." + e.Subdomain
	return []string{short + "." + e.Namespace + ".svc." + clusterDomain, short, e.Hostname}
}

// hostsFileContent renders a pod's /etc/hosts: the usual localhost lines, the
// pod itself, its peers (the other live pods of its namespace and subdomain),
// then the pod's hostAliases.
func hostsFileContent(self hostEntry, peers []hostEntry, aliases []corev1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString("# Kubernetes-managed hosts file (paddlejob node).\n")
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	fmt.Fprintf(&b, "%s\t%s\n", self.IP, strings.Join(self.names(), " "))

	sorted := append([]hostEntry(nil), peers...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Hostname < sorted[j].Hostname })
	if len(sorted) > 0 {
		fmt.Fprintf(&b, "# Pods of subdomain %s.\n", self.Subdomain)
	}
	for _, p := range sorted {
		fmt.Fprintf(&b, "%s\t%s\n", p.IP, strings.Join(p.names(), " "))
	}

	if len(aliases) > 0 {
		b.WriteString("# Entries added by HostAliases.\n")
	}
	for _, a := range aliases {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.Bytes()
}

// writeFileInPlace makes the file at path hold content, keeping its inode: it
// is bind-mounted into sandboxes, where a file renamed over it would not be
// seen. It reports whether the content changed.
func writeFileInPlace(path string, content []byte) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return false, err
	}
	defer f.Close()
	current, err := io.ReadAll(f)
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	if bytes.Equal(current, content) {
		return false, nil
	}
	if _, err := f.WriteAt(content, 0); err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Truncate(int64(len(content))); err != nil {
		return false, fmt.Errorf("truncating %s: %w", path, err)
	}
	return true, nil
}
