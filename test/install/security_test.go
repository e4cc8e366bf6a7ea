package install

import (
	"slices"
	"testing"
)

// restrictedVolumes are the volume types Pod Security "restricted" allows.
var restrictedVolumes = []string{"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}

// The operator's pod meets Pod Security "restricted" in every rendering:
// checked here field by field, and by the API server's PodSecurity admission
// in TestServerSideDryRun.
func TestPodIsRestricted(t *testing.T) {
	for _, r := range operatorRenderings(t) {
		t.Run(r.name, func(t *testing.T) {
			pod := mapOf(deployment(t, r).Object, "spec", "template", "spec")
			for _, host := range []string{"hostNetwork", "hostPID", "hostIPC"} {
				if pod[host] == true {
					t.Errorf("%s is set", host)
				}
			}
			if v := nested(pod, "securityContext", "runAsNonRoot"); v != true {
				t.Errorf("pod securityContext.runAsNonRoot is %v", v)
			}
			if v := str(pod, "securityContext", "seccompProfile", "type"); v != "RuntimeDefault" {
				t.Errorf("pod seccompProfile %q: want RuntimeDefault", v)
			}
			if v := nested(pod, "securityContext", "runAsUser"); v == int64(0) {
				t.Error("pod runs as root")
			}
			for _, v := range slice(pod, "volumes") {
				vol, _ := v.(map[string]any)
				for typ := range vol {
					if typ != "name" && !slices.Contains(restrictedVolumes, typ) {
						t.Errorf("volume %s of type %s", vol["name"], typ)
					}
				}
			}
			containers := append(slice(pod, "containers"), slice(pod, "initContainers")...)
			for _, c := range containers {
				sc := mapOf(c, "securityContext")
				name := str(c, "name")
				if sc["allowPrivilegeEscalation"] != false {
					t.Errorf("container %s: allowPrivilegeEscalation is %v", name, sc["allowPrivilegeEscalation"])
				}
				if sc["privileged"] == true {
					t.Errorf("container %s is privileged", name)
				}
				if sc["readOnlyRootFilesystem"] != true {
					t.Errorf("container %s: readOnlyRootFilesystem is %v", name, sc["readOnlyRootFilesystem"])
				}
				if drop := slice(sc, "capabilities", "drop"); !slices.Contains(drop, any("ALL")) {
					t.Errorf("container %s drops %v, not ALL", name, drop)
				}
				for _, add := range slice(sc, "capabilities", "add") {
					if add != "NET_BIND_SERVICE" {
						t.Errorf("container %s adds %v", name, add)
					}
				}
				if v := nested(sc, "runAsUser"); v == int64(0) {
					t.Errorf("container %s runs as root", name)
				}
				if v := str(sc, "seccompProfile", "type"); v != "" && v != "RuntimeDefault" && v != "Localhost" {
					t.Errorf("container %s: seccompProfile %q", name, v)
				}
				for _, p := range slice(c, "ports") {
					if nested(p, "hostPort") != nil {
						t.Errorf("container %s has a hostPort", name)
					}
				}
			}
		})
	}
}
