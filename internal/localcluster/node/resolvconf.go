package node

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A pod's /etc/resolv.conf, written as a kubelet writes it from the pod's
// dnsPolicy and dnsConfig. The node's own resolver is nobody's: pods reach
// nothing outside the cluster network, so "Default" (and a hostNetwork pod
// under ClusterFirst, which falls back to it) gets no name server at all.

// The resolver limits a kubelet enforces (glibc reads three name servers).
const (
	maxDNSNameservers = 3
	maxDNSSearches    = 32
	clusterDNSNdots   = "ndots:5"
)

// resolvConf is what a pod's /etc/resolv.conf says.
type resolvConf struct {
	Nameservers, Searches, Options []string
}

// podResolvConf is the resolver configuration of pod, whose cluster DNS
// server is clusterDNS ("" when the cluster has none). It fails, naming the
// field, when the pod asks for more than the resolver reads.
func podResolvConf(pod *corev1.Pod, clusterDNS string) (resolvConf, error) {
	policy := pod.Spec.DNSPolicy
	if policy == "" {
		policy = corev1.DNSClusterFirst
	}
	var rc resolvConf
	useCluster := policy == corev1.DNSClusterFirstWithHostNet ||
		(policy == corev1.DNSClusterFirst && !pod.Spec.HostNetwork)
	if useCluster && clusterDNS != "" {
		ns := pod.Namespace
		rc = resolvConf{
			Nameservers: []string{clusterDNS},
			Searches:    []string{ns + ".svc." + clusterDomain, "svc." + clusterDomain, clusterDomain},
			Options:     []string{clusterDNSNdots},
		}
	}
	if c := pod.Spec.DNSConfig; c != nil {
		rc.Nameservers = appendNew(rc.Nameservers, c.Nameservers...)
		rc.Searches = appendNew(rc.Searches, c.Searches...)
		for _, o := range c.Options {
			rc.Options = setOption(rc.Options, o)
		}
	}
	if len(rc.Nameservers) > maxDNSNameservers {
		return rc, fmt.Errorf("spec.dnsConfig.nameservers: %d name servers with the cluster's, at most %d are read", len(rc.Nameservers), maxDNSNameservers)
	}
	if len(rc.Searches) > maxDNSSearches {
		return rc, fmt.Errorf("spec.dnsConfig.searches: %d search domains with the cluster's, at most %d are read", len(rc.Searches), maxDNSSearches)
	}
	return rc, nil
}

// appendNew appends the values not already in list, in order.
func appendNew(list []string, values ...string) []string {
	for _, v := range values {
		if v != "" && !slices.Contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}

// setOption sets one resolver option: a dnsConfig option replaces the
// option of the same name ("ndots:2" replaces "ndots:5").
func setOption(options []string, o corev1.PodDNSConfigOption) []string {
	text := o.Name
	if o.Value != nil {
		text += ":" + *o.Value
	}
	for i, existing := range options {
		if name, _, _ := strings.Cut(existing, ":"); name == o.Name {
			options[i] = text
			return options
		}
	}
	return append(options, text)
}

// content renders the file.
func (rc resolvConf) content() []byte {
	var b bytes.Buffer
	b.WriteString("# Kubernetes-managed resolv.conf (paddlejob node).\n")
	for _, ns := range rc.Nameservers {
		fmt.Fprintf(&b, "nameserver %s\n", ns)
	}
	if len(rc.Searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(rc.Searches, " "))
	}
	if len(rc.Options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(rc.Options, " "))
	}
	return b.Bytes()
}
