//go:build integration

package node

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestLogsOverKubeletAPI(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	// The container prints a line, then waits for a file before printing the
	// rest, so a follower is there before the end.
	dir := podsHostDir(t)
	pod := n.shellPod(ns, "talker", "echo one; echo two; until [ -e /ctl/go ]; do sleep 0.05; done; echo three; echo four")
	pod.Spec.Volumes = []corev1.Volume{{Name: "ctl", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "ctl", MountPath: "/ctl"}}
	pod.Spec.InitContainers = []corev1.Container{shellContainer("setup", "echo init output")}
	n.create(t, pod)
	n.waitPhase(t, ns, "talker", corev1.PodRunning)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := n.logsRequest(ctx, ns, "talker", "main", "follow=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("follow: %s", resp.Status)
	}
	lines := bufio.NewReader(resp.Body)
	for _, want := range []string{"one\n", "two\n"} {
		if got, err := lines.ReadString('\n'); got != want {
			t.Fatalf("followed line %q (%v), want %q", got, err, want)
		}
	}
	if err := writeFile(dir+"/go", ""); err != nil {
		t.Fatal(err)
	}
	rest := readAll(t, lines)
	if rest != "three\nfour\n" {
		t.Errorf("follow went on with %q, want the remaining lines then the end", rest)
	}

	n.waitPhase(t, ns, "talker", corev1.PodSucceeded)
	if got := n.logs(t, ns, "talker", "main", "tailLines=2"); got != "three\nfour\n" {
		t.Errorf("tail=2: %q", got)
	}
	if got := n.logs(t, ns, "talker", "main", "limitBytes=6"); got != "one\ntw" {
		t.Errorf("limitBytes=6: %q", got)
	}
	stamped := n.logs(t, ns, "talker", "main", "timestamps=true")
	for _, line := range strings.Split(strings.TrimSuffix(stamped, "\n"), "\n") {
		ts, _, _ := strings.Cut(line, " ")
		if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
			t.Errorf("timestamped line %q: %v", line, err)
		}
	}
	if got := n.logs(t, ns, "talker", "main", "sinceTime="+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)); got != "" {
		t.Errorf("since the future: %q", got)
	}
	if got := n.logs(t, ns, "talker", "main", "sinceSeconds=3600"); got != "one\ntwo\nthree\nfour\n" {
		t.Errorf("since an hour ago: %q", got)
	}
	if got := n.logs(t, ns, "talker", "setup", ""); got != "init output\n" {
		t.Errorf("init container log: %q", got)
	}
	resp, err = n.logsRequest(context.Background(), ns, "talker", "main", "previous=true")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("previous log of a container that ran once: %s, want 400", resp.Status)
	}
}

func TestKubeletAPIRequiresClientCertificate(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	anonymous := &http.Client{Transport: &http.Transport{TLSClientConfig: n.http.Transport.(*http.Transport).TLSClientConfig.Clone()}}
	anonymous.Transport.(*http.Transport).TLSClientConfig.Certificates = nil
	resp, err := anonymous.Get("https://" + n.KubeletAddress() + "/pods")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a client without a certificate got %s", resp.Status)
	}
	resp, err = n.http.Get("https://" + n.KubeletAddress() + "/pods")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /pods with the client certificate: %s", resp.Status)
	}
}

func readAll(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	var b strings.Builder
	if _, err := r.WriteTo(&b); err != nil {
		t.Fatalf("reading the followed log: %v (so far %q)", err, b.String())
	}
	return b.String()
}
