package node

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// clusterDomain is the DNS domain of Service and pod names.
const clusterDomain = "cluster.local"

// hostEntry is a pod as its own /etc/hosts names it.
type hostEntry struct {
	IP, Hostname, Subdomain, Namespace string
	// UTSName is the pod's own hostname when it is not Hostname (a
	// hostNetwork pod has the node's): its line names it too.
	UTSName string
}

// names are the names the pod's hosts file gives its IP, canonical name
// first. A pod with a subdomain is also <hostname>.<subdomain>, the name the
// headless Service of that name gives it in the cluster's DNS.
func (e hostEntry) names() []string {
	if e.Subdomain == "" {
		return []string{e.Hostname}
	}
	short := e.Hostname + "." + e.Subdomain
	return []string{short + "." + e.Namespace + ".svc." + clusterDomain, short, e.Hostname}
}

// hostsFileContent renders a pod's /etc/hosts as a kubelet does: the usual
// localhost lines, the pod itself, then its hostAliases. Its peers are the
// cluster DNS server's to resolve (clusterdns.go).
func hostsFileContent(self hostEntry, aliases []corev1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString("# Kubernetes-managed hosts file (paddlejob node).\n")
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	selfNames := self.names()
	if self.UTSName != "" && !slices.Contains(selfNames, self.UTSName) {
		selfNames = append(selfNames, self.UTSName)
	}
	fmt.Fprintf(&b, "%s\t%s\n", self.IP, strings.Join(selfNames, " "))
	if len(aliases) > 0 {
		b.WriteString("# Entries added by HostAliases.\n")
	}
	for _, a := range aliases {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.Bytes()
}

// podHostsFile is the content of the pod's hosts file.
func (r *podRuntime) podHostsFile() []byte {
	pod := r.podCopy()
	self := hostEntry{IP: r.ip, Hostname: dnsHostname(pod), Subdomain: pod.Spec.Subdomain, Namespace: r.namespace, UTSName: r.hostname}
	return hostsFileContent(self, pod.Spec.HostAliases)
}
