package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
)

const (
	// DefaultInitImage runs the wait-for-endpoints init container; it needs
	// nothing but a POSIX shell.
	DefaultInitImage = "busybox:1.36"

	// waitContainerName is the init container that holds a pod's training
	// containers back until the job's endpoints are published.
	waitContainerName = paddlev1.ReservedInitContainer
	// portName names the pod's PADDLE_PORT so Services and NetworkPolicies can
	// refer to it.
	portName = "paddle"
	// endpointsVolume mounts the job's endpoints at
	// podcontract.EndpointsMountPath: the published job variables as files,
	// and this pod's published version.
	endpointsVolume = paddlev1.ReservedVolume
	// podVersionFile holds the pod's AnnotationEndpoints; the ConfigMap's
	// podcontract.VersionKey the version of its lists. They match once the
	// pod may start.
	podVersionFile = "pod-version"
)

// podOptions are the operator's settings that shape a job's pods.
type podOptions struct {
	InitImage string
	// gang and schedulerName put pods in their job's PodGroup.
	gang, schedulerName string
	// elasticEndpoints is the etcd of an elastic job.
	elasticEndpoints []string
	// glooStorePrefix is the Gloo store prefix of the pods a pass creates
	// for a job on the file-system rendezvous (gloo.go), "" otherwise.
	glooStorePrefix string
	// progressURL is the progress endpoint pods report to ("": off).
	progressURL string
	// specHashes are what each role's pods are made from (specchange.go),
	// hashed once per pass, not once per pod.
	specHashes map[paddlev1.ReplicaType]string
}

// podOptionsFor are the pod options of a job under the operator's settings.
func podOptionsFor(job *paddlev1.PaddleJob, opts Options) podOptions {
	gang := GangSchedulerFor(&job.Spec, opts)
	return podOptions{
		InitImage:        opts.InitImage,
		gang:             gang,
		schedulerName:    schedulerNameOf(gang, opts),
		elasticEndpoints: podcontract.ElasticEndpoints(job, opts.ElasticEtcdEndpoints),
		progressURL:      opts.Progress.URL,
		specHashes:       specHashes(&job.Spec),
	}
}

// podLabels are the labels of every pod of a role.
func podLabels(job string, rt paddlev1.ReplicaType, index int) map[string]string {
	return map[string]string{
		paddlev1.LabelJobName:      job,
		paddlev1.LabelReplicaType:  string(rt),
		paddlev1.LabelReplicaIndex: strconv.Itoa(index),
	}
}

// newPod builds the pod of a role and index from the role's template and its
// contract (podcontract.ForPod): the template as the user wrote it, plus
// identity, environment and networking, each feature's part from its file.
// The job variables (endpoint lists) are read from the endpoints ConfigMap,
// never written into the pod: a pod stays the same size whatever the job's
// size, where literal lists would make a job of N pods write O(N²) bytes.
func newPod(job *paddlev1.PaddleJob, rt paddlev1.ReplicaType, index int, ports podcontract.PortRange, opts podOptions) *corev1.Pod {
	tmpl := job.Spec.Replicas(rt).Template.DeepCopy()
	name := paddlev1.PodName(job.Name, rt, index)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       job.Namespace,
			Labels:          tmpl.Labels,
			Annotations:     tmpl.Annotations,
			Finalizers:      tmpl.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, paddlev1.GroupVersion.WithKind("PaddleJob"))},
		},
		Spec: tmpl.Spec,
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	maps.Copy(pod.Labels, podLabels(job.Name, rt, index))
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[paddlev1.AnnotationPorts] = ports.String()
	pod.Annotations[paddlev1.AnnotationSpecHash] = opts.specHashes[rt]

	spec := &pod.Spec
	spec.Hostname = name
	spec.Subdomain = job.Name
	// The kubelet restarts containers in place only under OnFailure; under
	// Never and ExitCode, and wherever a failure restarts the whole job, it
	// must reach the operator.
	spec.RestartPolicy = corev1.RestartPolicyNever
	if job.Spec.Replicas(rt).RestartPolicy == paddlev1.RestartPolicyOnFailure && job.Spec.RestartScope == paddlev1.RestartScopePod {
		spec.RestartPolicy = corev1.RestartPolicyOnFailure
	}

	contract := podcontract.ForPod(job, rt, index, ports, podcontract.PodEnvOptions{ElasticEndpoints: opts.elasticEndpoints, GlooStorePrefix: opts.glooStorePrefix})
	if opts.glooStorePrefix != "" && contract.GlooFiles {
		pod.Annotations[annotationGlooStorePrefix] = opts.glooStorePrefix
	}
	tunePod(spec, job.Spec.Mode())
	for i := range spec.InitContainers {
		injectContainer(&spec.InitContainers[i], contract.Env)
	}
	for i := range spec.Containers {
		injectContainer(&spec.Containers[i], contract.Env)
	}
	setPodNetwork(pod, contract.HostNetwork, ports)
	if contract.Server {
		probeServer(spec, ports.First)
	}
	if contract.GlooStore {
		addGlooStore(spec, ports.GlooPort())
	}

	if !hasVolume(spec.Volumes, endpointsVolume) {
		spec.Volumes = append(spec.Volumes, endpointsVolumeSource(job.Name))
	}
	if contract.Waits() {
		spec.InitContainers = append([]corev1.Container{waitContainer(job.Name, waitsFor(contract), opts.InitImage)}, spec.InitContainers...)
	}
	gangPod(pod, job.Name, opts.gang, opts.schedulerName)
	injectProgress(pod, job, opts.progressURL)
	keepLogTails(spec)
	return pod
}

// injectContainer adds the contract's variables (keeping the container's own)
// and mounts the endpoints volume where the path is free.
func injectContainer(c *corev1.Container, env []corev1.EnvVar) {
	c.Env = mergeEnv(c.Env, env)
	for _, m := range c.VolumeMounts {
		if m.Name == endpointsVolume || m.MountPath == podcontract.EndpointsMountPath {
			return
		}
	}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: endpointsVolume, MountPath: podcontract.EndpointsMountPath, ReadOnly: true})
}

func hasVolume(volumes []corev1.Volume, name string) bool {
	for _, v := range volumes {
		if v.Name == name {
			return true
		}
	}
	return false
}

// endpointsVolumeSource projects the job's endpoints ConfigMap (optional: it
// does not exist until the endpoints are published) and the pod's own
// published version into one directory.
func endpointsVolumeSource(job string) corev1.Volume {
	return corev1.Volume{
		Name: endpointsVolume,
		VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: podcontract.EndpointsConfigMapName(job)},
					Optional:             ptr.To(true),
				}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
					Path:     podVersionFile,
					FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: fmt.Sprintf("metadata.annotations['%s']", paddlev1.AnnotationEndpoints)},
				}}}},
			},
		}},
	}
}

// waitsFor says what a waiting pod of a role waits for, for its log.
func waitsFor(contract podcontract.Pod) string {
	var what []string
	if contract.WaitsForEndpoints {
		what = append(what, "every pod of the job has an IP")
	}
	if len(contract.WaitsForServers) > 0 {
		what = append(what, "every server it connects to accepts connections")
	}
	return strings.Join(what, " and ")
}

// waitContainer blocks until the operator has released this pod, so the
// training containers start with final lists, and after the servers they
// connect to, and no pod passes through an error state meanwhile. It needs no
// API access: the operator marks the pod (releasePods) and the node
// refreshes the projected files.
func waitContainer(job, waitsFor, image string) corev1.Container {
	script := fmt.Sprintf(`echo "waiting for PaddleJob %[1]s to release this pod: it does once %[5]s"
while :; do
  want=$(cat %[2]s/%[3]s 2>/dev/null); have=$(cat %[2]s/%[4]s 2>/dev/null)
  if [ -n "$want" ] && [ "$want" = "$have" ]; then echo "released (endpoints version $have)"; exit 0; fi
  sleep 0.2 2>/dev/null || sleep 1
done`, job, podcontract.EndpointsMountPath, podVersionFile, podcontract.VersionKey, waitsFor)
	small := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("10m"),
		corev1.ResourceMemory: resource.MustParse("16Mi"),
	}
	return corev1.Container{
		Name:         waitContainerName,
		Image:        image,
		Command:      []string{"sh", "-c", script},
		VolumeMounts: []corev1.VolumeMount{{Name: endpointsVolume, MountPath: podcontract.EndpointsMountPath, ReadOnly: true}},
		Resources:    corev1.ResourceRequirements{Requests: small, Limits: small},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			RunAsUser:                ptr.To[int64](65534),
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}

// podIndex returns the role and index of a pod the operator created
// (paddlev1.PodReplica); ok is false for any other pod.
func podIndex(pod *corev1.Pod) (rt paddlev1.ReplicaType, index int, ok bool) {
	rt, index, err := paddlev1.PodReplica(pod)
	return rt, index, err == nil
}

// jobPods lists the pods the job controls, from the cache.
func (r *PaddleJobReconciler) jobPods(ctx context.Context, job *paddlev1.PaddleJob) ([]*corev1.Pod, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(job.Namespace), client.MatchingFields{podOwnerKey: job.Name}); err != nil {
		return nil, fmt.Errorf("listing pods of PaddleJob %s/%s: %w", job.Namespace, job.Name, err)
	}
	out := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		if ref := metav1.GetControllerOf(&list.Items[i]); ref != nil && ref.UID == job.UID {
			out = append(out, &list.Items[i])
		}
	}
	return sortPods(out), nil
}

// splitPods separates the pods the spec wants (index < replicas, not being
// deleted) from the pods beyond the replica counts.
func splitPods(job *paddlev1.PaddleJob, pods []*corev1.Pod) (active, excess []*corev1.Pod) {
	for _, p := range pods {
		rt, i, ok := podIndex(p)
		switch {
		case p.DeletionTimestamp != nil:
		case !ok || i >= job.Spec.ReplicaCount(rt):
			excess = append(excess, p)
		default:
			active = append(active, p)
		}
	}
	return active, excess
}

// sortPods orders pods by role (ps, worker, heter) then index
// (paddlev1.ComparePods): every list the operator derives from pods is
// deterministic.
func sortPods(pods []*corev1.Pod) []*corev1.Pod {
	slices.SortStableFunc(pods, paddlev1.ComparePods)
	return pods
}

// FirstPods are the pods the operator would create first for each role of
// the job (index 0, the default ports), for the admission webhook to have
// the API server validate before the job is stored.
func FirstPods(job *paddlev1.PaddleJob, opts Options) map[paddlev1.ReplicaType]*corev1.Pod {
	job = job.Defaulted() // as Reconcile reads it
	out := map[paddlev1.ReplicaType]*corev1.Pod{}
	popts := podOptionsFor(job, opts)
	for _, rt := range paddlev1.ReplicaTypes {
		if rs := job.Spec.Replicas(rt); rs != nil {
			out[rt] = newPod(job, rt, 0, podcontract.DefaultPortRange(rs), popts)
		}
	}
	return out
}

// mergeEnv appends the operator's variables to a container's, keeping every
// variable the container sets itself.
func mergeEnv(own, ours []corev1.EnvVar) []corev1.EnvVar {
	set := make(map[string]bool, len(own))
	for _, e := range own {
		set[e.Name] = true
	}
	out := append([]corev1.EnvVar(nil), own...)
	for _, e := range ours {
		if !set[e.Name] {
			out = append(out, e)
		}
	}
	return out
}
