package client

import (
	"errors"
	"fmt"
	"maps"
	"math/big"
	"path"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/shellwords"
)

// TrainingJob is a training job described by the parameters of the
// original paddle.job SDK: an image, an entry point, the resources of each
// pod and the number of pservers and trainers — a parameter-server job, or
// with Collective a collective one of trainers alone. Build turns it into a
// PaddleJob.
type TrainingJob struct {
	// Name is the job's name (job_name).
	Name string
	// Namespace defaults to "default".
	Namespace string
	// Image is the runtime image holding the trainer package (runtime_image).
	Image string
	// EntryPoint starts a trainer or pserver, e.g. "python train.py"
	// (entry_point). Shell-style quotes are honoured; no shell is run.
	EntryPoint string
	// WorkDir is where the trainer package is in the image
	// (trainer_package_path); the entry point runs there.
	WorkDir string
	// CPU is the CPU count of each pod (cpu_nums), at least 1.
	CPU int
	// Memory is the memory of each pod: a plain integer with one of the
	// suffixes E, P, T, G, M or K (powers of 1000, K being Kubernetes' k),
	// e.g. "8G", or Ei, Pi, Ti, Gi, Mi or Ki (powers of 1024, as Kubernetes
	// writes them), e.g. "8Gi". Empty sets no memory request or limit: seed
	// 002's example passes none.
	Memory string
	// GPU is the GPU count of each trainer (gpu_nums).
	GPU int
	// PServers is the number of parameter servers (pservers), default 2.
	PServers int
	// Trainers is the number of trainers (trainers), default 3.
	Trainers int
	// Collective makes a collective job: Trainers workers and no parameter
	// server (PServers must be 0).
	Collective bool

	// Volumes mounted in every pod.
	CephFS    *CephFSVolume
	NFS       []NFSVolume
	Claims    []ClaimVolume
	HostPaths []HostPathVolume

	// Env is added to every container.
	Env map[string]string
	// Intranet and CleanPodPolicy are passed through.
	Intranet       paddlev1.Intranet
	CleanPodPolicy paddlev1.CleanPodPolicy
	// RestartPolicy is the restart policy of the pservers and trainers
	// (empty: Never); a restartable failure restarts the whole job.
	RestartPolicy paddlev1.RestartPolicy
	// ProgressDeadlineSeconds, when positive, restarts (or fails) the job
	// when its trainers report no progress for that long.
	ProgressDeadlineSeconds int64
}

// CephFSVolume mounts a CephFS path (cephfs_volume).
type CephFSVolume struct {
	// Monitors are the Ceph monitors' addresses (monitors_addr), required.
	Monitors []string
	// User defaults to "admin".
	User string
	// SecretName is the Kubernetes Secret with the Ceph key, default "cephfs-secret".
	SecretName string
	// MountPath defaults to /mnt/cephfs.
	MountPath string
	// Path is the CephFS path, default "/".
	Path string
}

// NFSVolume mounts an NFS export.
type NFSVolume struct {
	Server, Path, MountPath string
	ReadOnly                bool
}

// ClaimVolume mounts a PersistentVolumeClaim.
type ClaimVolume struct {
	ClaimName, MountPath string
	ReadOnly             bool
}

// HostPathVolume mounts a directory of the node.
type HostPathVolume struct {
	Path, MountPath string
	ReadOnly        bool
}

// Defaults of the original SDK.
const (
	DefaultPServers         = 2
	DefaultTrainers         = 3
	DefaultCephFSUser       = "admin"
	DefaultCephFSSecretName = "cephfs-secret"
	DefaultCephFSMountPath  = "/mnt/cephfs"
	DefaultCephFSPath       = "/"
	containerName           = "paddle"
)

// FieldError is an invalid parameter: the field, its value and the rule.
type FieldError struct {
	Field string
	Value any
	Rule  string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s %v: %s", e.Field, e.Value, e.Rule) }

var (
	jobName   = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	memoryFmt = regexp.MustCompile(`^[1-9][0-9]*[EPTGMK]i?$`)
)

// Build validates the parameters (every problem, each a *FieldError) and
// returns the PaddleJob.
func (t TrainingJob) Build() (*paddlev1.PaddleJob, error) {
	t.defaults()
	var errs []error
	bad := func(field string, value any, rule string) { errs = append(errs, &FieldError{field, value, rule}) }

	if !jobName.MatchString(t.Name) || len(t.Name) > paddlev1.MaxJobNameLength {
		bad("Name", fmt.Sprintf("%q", t.Name), fmt.Sprintf("must be lowercase letters, digits and '-', start with a letter and have at most %d characters", paddlev1.MaxJobNameLength))
	}
	if err := ValidateImage(t.Image); err != nil {
		bad("Image", fmt.Sprintf("%q", t.Image), err.Error())
	}
	command, err := shellwords.Split(t.EntryPoint)
	if err != nil || len(command) == 0 {
		bad("EntryPoint", fmt.Sprintf("%q", t.EntryPoint), "must be a command line such as \"python train.py\"")
	}
	if t.WorkDir != "" && !path.IsAbs(t.WorkDir) {
		bad("WorkDir", t.WorkDir, "must be an absolute path in the image")
	}
	if t.CPU < 1 {
		bad("CPU", t.CPU, "must be at least 1")
	}
	memory, err := parseMemory(t.Memory)
	if err != nil {
		bad("Memory", fmt.Sprintf("%q", t.Memory), err.Error())
	}
	if t.GPU < 0 {
		bad("GPU", t.GPU, "must not be negative")
	}
	switch {
	case t.Collective && t.PServers != 0:
		bad("PServers", t.PServers, "a collective job has no parameter servers (leave it 0)")
	case !t.Collective && (t.PServers < 1 || t.PServers > paddlev1.MaxReplicas):
		bad("PServers", t.PServers, fmt.Sprintf("must be between 1 and %d", paddlev1.MaxReplicas))
	}
	if t.Trainers < 1 || t.Trainers > paddlev1.MaxReplicas {
		bad("Trainers", t.Trainers, fmt.Sprintf("must be between 1 and %d", paddlev1.MaxReplicas))
	}
	if t.RestartPolicy != "" && !slices.Contains(paddlev1.RestartPolicies, t.RestartPolicy) {
		bad("RestartPolicy", fmt.Sprintf("%q", t.RestartPolicy), "must be "+paddlev1.OneOf(paddlev1.RestartPolicies))
	}
	if t.ProgressDeadlineSeconds < 0 {
		bad("ProgressDeadlineSeconds", t.ProgressDeadlineSeconds, "must not be negative (0: none)")
	}
	volumes, mounts, verrs := t.volumes()
	errs = append(errs, verrs...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	trainer := t.template(command, memory, volumes, mounts, t.GPU)
	b := NewJob(t.Name, t.Namespace)
	if !t.Collective {
		b.PS(int32(t.PServers), t.template(command, memory, volumes, mounts, 0))
	}
	b.Workers(int32(t.Trainers), trainer).
		Intranet(t.Intranet).
		CleanPodPolicy(t.CleanPodPolicy).
		RestartPolicy(t.RestartPolicy)
	if t.ProgressDeadlineSeconds > 0 {
		b.ProgressDeadlineSeconds(t.ProgressDeadlineSeconds)
	}
	return b.Obj(), nil
}

func (t *TrainingJob) defaults() {
	if t.Namespace == "" {
		t.Namespace = "default"
	}
	if t.PServers == 0 && !t.Collective {
		t.PServers = DefaultPServers
	}
	if t.Trainers == 0 {
		t.Trainers = DefaultTrainers
	}
	if c := t.CephFS; c != nil {
		c.User = or(c.User, DefaultCephFSUser)
		c.SecretName = or(c.SecretName, DefaultCephFSSecretName)
		c.MountPath = or(c.MountPath, DefaultCephFSMountPath)
		c.Path = or(c.Path, DefaultCephFSPath)
	}
}

// template is the pod template of a role: the entry point with the job's
// resources, volumes and environment.
func (t TrainingJob) template(command []string, memory *resource.Quantity, volumes []corev1.Volume, mounts []corev1.VolumeMount, gpus int) corev1.PodTemplateSpec {
	res := corev1.ResourceList{
		corev1.ResourceCPU: *resource.NewQuantity(int64(t.CPU), resource.DecimalSI),
	}
	if memory != nil {
		res[corev1.ResourceMemory] = *memory
	}
	limits := res.DeepCopy()
	if gpus > 0 {
		limits["nvidia.com/gpu"] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	}
	c := corev1.Container{
		Name:         containerName,
		Image:        t.Image,
		Command:      command,
		WorkingDir:   t.WorkDir,
		Resources:    corev1.ResourceRequirements{Requests: res, Limits: limits},
		VolumeMounts: mounts,
	}
	for _, k := range slices.Sorted(maps.Keys(t.Env)) {
		c.Env = append(c.Env, corev1.EnvVar{Name: k, Value: t.Env[k]})
	}
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{c}, Volumes: volumes}}
}

// volumes turns the storage parameters into volumes and mounts.
func (t TrainingJob) volumes() ([]corev1.Volume, []corev1.VolumeMount, []error) {
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	var errs []error
	used := map[string]bool{}
	add := func(field, mountPath string, readOnly bool, src corev1.VolumeSource) {
		if !path.IsAbs(mountPath) {
			errs = append(errs, &FieldError{field, mountPath, "the mount path must be absolute"})
			return
		}
		if used[mountPath] {
			errs = append(errs, &FieldError{field, mountPath, "another volume is mounted there"})
			return
		}
		used[mountPath] = true
		name := fmt.Sprintf("data-%d", len(vols))
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: src})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: mountPath, ReadOnly: readOnly})
	}
	if c := t.CephFS; c != nil {
		if len(c.Monitors) == 0 {
			errs = append(errs, &FieldError{"CephFS.Monitors", "[]", "at least one Ceph monitor address is required"})
		}
		add("CephFS.MountPath", c.MountPath, false, corev1.VolumeSource{CephFS: &corev1.CephFSVolumeSource{
			Monitors: c.Monitors, User: c.User, Path: c.Path, SecretRef: &corev1.LocalObjectReference{Name: c.SecretName},
		}})
	}
	for _, n := range t.NFS {
		if n.Server == "" || !path.IsAbs(n.Path) {
			errs = append(errs, &FieldError{"NFS", n.Server + ":" + n.Path, "want server:/exported/path"})
			continue
		}
		add("NFS.MountPath", n.MountPath, n.ReadOnly, corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: n.Server, Path: n.Path, ReadOnly: n.ReadOnly}})
	}
	for _, c := range t.Claims {
		if c.ClaimName == "" {
			errs = append(errs, &FieldError{"Claims.ClaimName", `""`, "the claim name is required"})
			continue
		}
		add("Claims.MountPath", c.MountPath, c.ReadOnly, corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.ClaimName, ReadOnly: c.ReadOnly}})
	}
	for _, h := range t.HostPaths {
		if !path.IsAbs(h.Path) {
			errs = append(errs, &FieldError{"HostPaths.Path", h.Path, "the host path must be absolute"})
			continue
		}
		add("HostPaths.MountPath", h.MountPath, h.ReadOnly, corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: h.Path}})
	}
	return vols, mounts, errs
}

// maxMemory is the most memory a quantity holds: 2^63-1 bytes.
var maxMemory = new(big.Int).SetUint64(1<<63 - 1)

// parseMemory turns the paddle.job SDK's memory notation, or its binary form, into a
// quantity: nil for "", K read as Kubernetes' k (1000), Ki as 1024, at most
// 2^63-1 bytes.
func parseMemory(s string) (*resource.Quantity, error) {
	if s == "" {
		return nil, nil
	}
	if !memoryFmt.MatchString(s) {
		return nil, errors.New("must be a plain integer with one of the suffixes E, P, T, G, M, K (powers of 1000, for example 8G) or Ei, Pi, Ti, Gi, Mi, Ki (powers of 1024, for example 8Gi)")
	}
	digits, suffix := s, ""
	base := int64(1000)
	if strings.HasSuffix(s, "i") {
		base = 1024
		digits, suffix = s[:len(s)-2], s[len(s)-2:len(s)-1]
	} else {
		digits, suffix = s[:len(s)-1], s[len(s)-1:]
	}
	n, _ := new(big.Int).SetString(digits, 10)
	exp := int64(strings.Index("KMGTPE", suffix) + 1)
	if n.Mul(n, new(big.Int).Exp(big.NewInt(base), big.NewInt(exp), nil)).Cmp(maxMemory) > 0 {
		return nil, errors.New("must be at most 9223372036854775807 bytes (9E, 7Ei)")
	}
	if strings.HasSuffix(s, "K") {
		s = strings.TrimSuffix(s, "K") + "k" // "12K" is no Kubernetes quantity
	}
	q := resource.MustParse(s)
	return &q, nil
}

func or(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}
