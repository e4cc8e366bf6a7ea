package node

// Sandbox preparation: the files a pod's containers share (directories,
// hostname, hosts and resolv.conf files) and its volumes, put in place before any
// container starts and kept up to date while the pod runs.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// prepare puts the pod's files in place: its directories, hostname, hosts and resolv.conf
// files, and volumes.
func (r *podRuntime) prepare(ctx context.Context) error {
	for _, d := range []string{"etc", "logs", "volumes"} {
		if err := os.MkdirAll(filepath.Join(r.dir, d), 0o755); err != nil {
			return r.failPreparing("FailedCreatePodSandBox", err)
		}
	}
	if err := os.WriteFile(r.hostnamePath(), []byte(r.hostname+"\n"), 0o644); err != nil {
		return r.failPreparing("FailedCreatePodSandBox", err)
	}
	rc, err := podResolvConf(r.podCopy(), r.deps.clusterDNS)
	if err != nil {
		return r.failPreparing("DNSConfigForming", err)
	}
	if err := os.WriteFile(r.resolvConfPath(), rc.content(), 0o644); err != nil {
		return r.failPreparing("FailedCreatePodSandBox", err)
	}
	if err := os.WriteFile(r.hostsPath(), r.podHostsFile(), 0o644); err != nil {
		return r.failPreparing("FailedCreatePodSandBox", err)
	}
	if err := r.setUpNetwork(); err != nil {
		return r.failPreparing("FailedCreatePodSandBox", err)
	}
	r.mu.Lock()
	r.sandboxReady = true
	r.mu.Unlock()
	r.publish()

	pod := r.podCopy()
	vols := map[string]podVolume{}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if isProjection(v) {
			vols[v.Name] = podVolume{Name: v.Name, HostPath: r.projectionDir(v.Name), ReadOnly: true, Projection: true}
			continue
		}
		pv, err := r.deps.setUpVolume(ctx, pod.Namespace, r.dir, v)
		if err != nil {
			return r.failPreparing("FailedMount", err)
		}
		vols[v.Name] = pv
	}
	if err := r.syncProjections(); err != nil {
		return r.failPreparing("FailedMount", err)
	}
	r.mu.Lock()
	r.volumes = vols
	r.mu.Unlock()
	return nil
}

// failPreparing records why the pod cannot start yet on its waiting
// containers and in an event.
func (r *podRuntime) failPreparing(reason string, err error) error {
	r.mu.Lock()
	for _, c := range r.allRuns() {
		if c.state.Waiting != nil {
			c.state.Waiting.Message = err.Error()
		}
	}
	r.mu.Unlock()
	r.warnOnce(nil, reason, err.Error())
	r.publish()
	return err
}

func (r *podRuntime) refreshProjectionsLoop(ctx context.Context) {
	for {
		changed := r.changed.changed()
		if err := r.syncProjections(); err != nil {
			// The kubelet keeps the last content when an object goes away.
			r.deps.log.V(1).Info("Cannot refresh volume", "pod", r.key, "err", err.Error())
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// syncProjections writes the configMap, secret, downwardAPI and projected
// volumes whose content changed.
func (r *podRuntime) syncProjections() error {
	r.volumesMu.Lock()
	defer r.volumesMu.Unlock()
	pod := r.podCopy()
	if r.projections == nil {
		r.projections = map[string][32]byte{}
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if !isProjection(v) {
			continue
		}
		files, warnings, err := projectionPayload(pod, v, r.deps.objects, r.deps.allocatable)
		if err != nil {
			return fmt.Errorf("volume %q: %w", v.Name, err)
		}
		d := payloadDigest(files)
		if prev, ok := r.projections[v.Name]; ok && prev == d {
			continue
		}
		for _, w := range warnings {
			r.deps.log.Info("Skipping part of a volume", "pod", r.key, "warning", w)
		}
		if err := writeProjection(r.projectionDir(v.Name), files); err != nil {
			return fmt.Errorf("writing volume %q: %w", v.Name, err)
		}
		if err := r.giveToPodRoot(r.projectionDir(v.Name)); err != nil {
			return fmt.Errorf("volume %q: %w", v.Name, err)
		}
		r.projections[v.Name] = d
	}
	return nil
}

func (r *podRuntime) hostsPath() string    { return filepath.Join(r.dir, "etc", "hosts") }
func (r *podRuntime) hostnamePath() string { return filepath.Join(r.dir, "etc", "hostname") }
func (r *podRuntime) resolvConfPath() string {
	return filepath.Join(r.dir, "etc", "resolv.conf")
}
func (r *podRuntime) projectionDir(volume string) string {
	return filepath.Join(r.dir, "volumes", volume)
}
