package controller

import (
	"fmt"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
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
	// endpointsVolume mounts the job's endpoints at endpointsMountPath: the
	// published job variables as files, and this pod's published version.
	endpointsVolume    = paddlev1.ReservedVolume
	endpointsMountPath = "/etc/paddlejob"
	// podVersionFile holds the pod's AnnotationEndpoints; versionKey the
	// version of the ConfigMap's lists. They match once the pod may start.
	podVersionFile = "pod-version"
	versionKey     = "version"
)

// podOptions are the operator's settings that shape a job's pods.
type podOptions struct {
	InitImage string
	// gang and schedulerName put pods in their job's PodGroup.
	gang, schedulerName string
	// elasticEndpoints is the etcd of an elastic job.
	elasticEndpoints []string
	// progressURL is the progress endpoint pods report to ("": off).
	progressURL string
}

// podOptionsFor are the pod options of a job under the operator's settings.
func podOptionsFor(job *paddlev1.PaddleJob, opts Options) podOptions {
	gang := gangSchedulerFor(&job.Spec, opts)
	return podOptions{
		InitImage:        opts.InitImage,
		gang:             gang,
		schedulerName:    schedulerNameOf(gang, opts),
		elasticEndpoints: elasticEndpoints(job, opts.ElasticEtcdEndpoints),
		progressURL:      opts.Progress.URL,
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

// waitsForEndpoints reports whether pods of the job start only once every pod
// has an IP: addresses are IPs in PodIP and Host intranet.
func waitsForEndpoints(spec *paddlev1.PaddleJobSpec) bool {
	return spec.EffectiveIntranet() != paddlev1.IntranetService
}

// newPod builds the pod of a role and index from the role's template: the
// template as the user wrote it, plus identity, environment and networking.
// The job variables (endpoint lists) are read from the endpoints ConfigMap,
// never written into the pod: a pod stays the same size whatever the job's
// size, where literal lists would make a job of N pods write O(N²) bytes.
func newPod(job *paddlev1.PaddleJob, rt paddlev1.ReplicaType, index int, ports portRange, opts podOptions) *corev1.Pod {
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

	spec := &pod.Spec
	spec.Hostname = name
	spec.Subdomain = job.Name
	// The kubelet restarts containers in place only under OnFailure; under
	// Never and ExitCode a failure must reach the operator.
	spec.RestartPolicy = corev1.RestartPolicyNever
	if job.Spec.EffectiveRestartPolicy(rt) == paddlev1.RestartPolicyOnFailure {
		spec.RestartPolicy = corev1.RestartPolicyOnFailure
	}
	if job.Spec.EffectiveIntranet() == paddlev1.IntranetHost {
		spec.HostNetwork = true
		if spec.DNSPolicy == "" {
			spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
		}
	}

	env := podEnv(job, rt, index, ports, opts.elasticEndpoints)
	for _, n := range jobEnvNames(&job.Spec, rt) {
		// Optional: a list the ConfigMap leaves out (see workerListsInEnv)
		// is not set at all.
		env = append(env, corev1.EnvVar{Name: n, ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: endpointsConfigMapName(job.Name)},
				Key:                  n,
				Optional:             ptr.To(true),
			},
		}})
	}
	for i := range spec.InitContainers {
		injectContainer(&spec.InitContainers[i], env)
	}
	for i := range spec.Containers {
		injectContainer(&spec.Containers[i], env)
	}
	addPorts(pod, job.Spec.EffectiveIntranet(), ports)

	if !hasVolume(spec.Volumes, endpointsVolume) {
		spec.Volumes = append(spec.Volumes, endpointsVolumeSource(job.Name))
	}
	if waitsForEndpoints(&job.Spec) {
		spec.InitContainers = append([]corev1.Container{waitContainer(job.Name, opts.InitImage)}, spec.InitContainers...)
	}
	gangPod(pod, job.Name, opts.gang, opts.schedulerName)
	injectProgress(pod, job, opts.progressURL)
	return pod
}

// injectContainer adds the contract's variables (keeping the container's own)
// and mounts the endpoints volume where the path is free.
func injectContainer(c *corev1.Container, env []corev1.EnvVar) {
	c.Env = mergeEnv(c.Env, env)
	for _, m := range c.VolumeMounts {
		if m.Name == endpointsVolume || m.MountPath == endpointsMountPath {
			return
		}
	}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: endpointsVolume, MountPath: endpointsMountPath, ReadOnly: true})
}

// addPorts declares the pod's PADDLE_PORT as the named port "paddle" on its
// first container. In Host intranet every port of the range is declared as a
// host port, so the scheduler never puts the pod beside another pod holding
// one of them.
func addPorts(pod *corev1.Pod, intranet paddlev1.Intranet, ports portRange) {
	c := &pod.Spec.Containers[0]
	declared := map[int32]bool{}
	named := false
	for _, cs := range pod.Spec.Containers {
		for _, p := range cs.Ports {
			declared[p.ContainerPort] = true
			named = named || p.Name == portName
		}
	}
	for port := ports.First; port <= ports.last(); port++ {
		if declared[port] {
			continue
		}
		cp := corev1.ContainerPort{ContainerPort: port, Protocol: corev1.ProtocolTCP}
		if port == ports.First && !named {
			cp.Name = portName
		}
		if intranet == paddlev1.IntranetHost {
			cp.HostPort = port
		} else if port != ports.First {
			continue
		}
		c.Ports = append(c.Ports, cp)
	}
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
					LocalObjectReference: corev1.LocalObjectReference{Name: endpointsConfigMapName(job)},
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

// waitContainer blocks until the operator has published the job's endpoints
// for this pod, so the training containers start with final lists and no pod
// passes through an error state meanwhile. It needs no API access: the
// operator marks the pod once the ConfigMap holds every pod's address, and the
// node refreshes the projected files.
func waitContainer(job, image string) corev1.Container {
	script := fmt.Sprintf(`echo "waiting for the endpoints of PaddleJob %[1]s: they are published once every pod of the job has an IP"
while :; do
  want=$(cat %[2]s/%[3]s 2>/dev/null); have=$(cat %[2]s/%[4]s 2>/dev/null)
  if [ -n "$want" ] && [ "$want" = "$have" ]; then echo "endpoints published (version $have)"; exit 0; fi
  sleep 0.2 2>/dev/null || sleep 1
done`, job, endpointsMountPath, podVersionFile, versionKey)
	small := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("10m"),
		corev1.ResourceMemory: resource.MustParse("16Mi"),
	}
	return corev1.Container{
		Name:         waitContainerName,
		Image:        image,
		Command:      []string{"sh", "-c", script},
		VolumeMounts: []corev1.VolumeMount{{Name: endpointsVolume, MountPath: endpointsMountPath, ReadOnly: true}},
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

// podIndex returns the role and index of a pod the operator created.
func podIndex(pod *corev1.Pod) (paddlev1.ReplicaType, int, bool) {
	rt := paddlev1.ReplicaType(pod.Labels[paddlev1.LabelReplicaType])
	if _, known := trainingRoles[rt]; !known {
		return "", 0, false
	}
	i, err := strconv.Atoi(pod.Labels[paddlev1.LabelReplicaIndex])
	if err != nil || i < 0 || pod.Name != paddlev1.PodName(pod.Labels[paddlev1.LabelJobName], rt, i) {
		return "", 0, false
	}
	return rt, i, true
}
