package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

func TestTunePod(t *testing.T) {
	cpu := func(limit, request string) corev1.ResourceRequirements {
		r := corev1.ResourceRequirements{Limits: corev1.ResourceList{}, Requests: corev1.ResourceList{}}
		if limit != "" {
			r.Limits[corev1.ResourceCPU] = resource.MustParse(limit)
		}
		if request != "" {
			r.Requests[corev1.ResourceCPU] = resource.MustParse(request)
		}
		return r
	}
	readOnly := &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)}
	tests := []struct {
		name      string
		mode      paddlev1.PaddleJobMode
		container corev1.Container
		// threads is OMP_NUM_THREADS and MKL_NUM_THREADS; "" when unset.
		threads string
		logDir  string
		pir     string
	}{
		{name: "parameter server: the old IR", mode: paddlev1.PaddleJobModePS, container: corev1.Container{}, pir: "0"},
		{name: "parameter server, the template's IR kept", mode: paddlev1.PaddleJobModePS,
			container: corev1.Container{Env: []corev1.EnvVar{{Name: envPIR, Value: "1"}}}, pir: "1"},
		{name: "parameter server with envFrom: nothing is added", mode: paddlev1.PaddleJobModePS,
			container: corev1.Container{Resources: cpu("2", ""), EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{}}}}},
		{name: "collective: Paddle's own IR", mode: paddlev1.PaddleJobModeCollective, container: corev1.Container{Resources: cpu("2", "")}, threads: "2"},
		{name: "the request, not a higher limit", container: corev1.Container{Resources: cpu("4", "2")}, threads: "2"},
		{name: "a fraction rounds up", container: corev1.Container{Resources: cpu("", "1500m")}, threads: "2"},
		{name: "less than a CPU is one thread", container: corev1.Container{Resources: cpu("", "250m")}, threads: "1"},
		{name: "a limit alone (the API server's default request)", container: corev1.Container{Resources: cpu("3", "")}, threads: "3"},
		{name: "neither: Paddle's own default", container: corev1.Container{}},
		{name: "the template's own threads are kept",
			container: corev1.Container{Resources: cpu("4", ""), Env: []corev1.EnvVar{{Name: "OMP_NUM_THREADS", Value: "1"}}}, threads: "1"},
		{name: "envFrom may set them: nothing is added",
			container: corev1.Container{Resources: cpu("4", ""), EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{}}}}},
		{name: "read-only root: logs on the pod's volume",
			container: corev1.Container{SecurityContext: readOnly}, logDir: logMountPath},
		{name: "read-only root with its own log dir",
			container: corev1.Container{SecurityContext: readOnly, Env: []corev1.EnvVar{{Name: envLogDir, Value: "/data/log"}}}, logDir: "/data/log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mode := tt.mode
			if mode == "" {
				mode = paddlev1.PaddleJobModeSingle
			}
			spec := corev1.PodSpec{Containers: []corev1.Container{tt.container}}
			tunePod(&spec, mode)
			c := spec.Containers[0]
			for _, name := range threadEnvNames {
				got := envValue(c.Env, name)
				want := tt.threads
				if name == "MKL_NUM_THREADS" && hasEnv(tt.container.Env, threadEnvNames...) {
					want = "" // the template chose; MKL follows its OMP
				}
				if got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			if got := envValue(c.Env, envPIR); got != tt.pir {
				t.Errorf("%s = %q, want %q", envPIR, got, tt.pir)
			}
			if got := envValue(c.Env, envLogDir); got != tt.logDir {
				t.Errorf("%s = %q, want %q", envLogDir, got, tt.logDir)
			}
			gotVolume := hasVolume(spec.Volumes, logVolume)
			if wantVolume := tt.logDir == logMountPath; gotVolume != wantVolume || hasMount(c, logMountPath) != wantVolume {
				t.Errorf("log volume %v, mounted %v; want %v", gotVolume, hasMount(c, logMountPath), wantVolume)
			}
		})
	}
}

// envValue is the value env gives name, "" when it does not.
func envValue(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
