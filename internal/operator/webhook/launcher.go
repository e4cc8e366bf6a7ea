package webhook

import (
	"fmt"
	"strings"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Layouts where Paddle's own launcher (python -m paddle.distributed.launch)
// cannot run a pod's process as the operator describes it, whatever the
// environment: the job is accepted (the program may be started some other
// way by the script the template runs) and warned about, naming the fix.
// docs/env-contract.md gives Paddle's source lines.

// launcherModule is what a container's command or args name to run Paddle's
// launcher, directly or inside a shell line.
const launcherModule = "paddle.distributed.launch"

// launcherWarnings warns about heter pods started by Paddle's launcher: its
// parameter-server mode starts only PSERVER and TRAINER processes, those
// whose endpoint starts with the pod's address; a heter trainer's endpoint
// is in neither list, so it starts nothing and stops with "No container in
// the pod". (In Host intranet parameter-server pods are addressed by name,
// so pods sharing a node each start only their own process.)
func launcherWarnings(job *paddlev1.PaddleJob) []string {
	spec := &job.Spec
	if spec.PS == nil || spec.Heter == nil || !runsLauncher(spec.Heter) {
		return nil
	}
	return []string{fmt.Sprintf(
		"spec.heter.template runs %s, which cannot start a heter trainer: in parameter-server mode it starts only the servers and trainers of PADDLE_SERVERS_ENDPOINTS and PADDLE_TRAINERS_ENDPOINTS, none of which is a heter pod, and stops with \"No container in the pod\"; run the program directly (python train.py): the operator's environment gives it its role (TRAINING_ROLE=HETER_TRAINER)",
		launcherModule)}
}

// runsLauncher reports whether a container of the role starts Paddle's
// launcher.
func runsLauncher(rs *paddlev1.ReplicaSpec) bool {
	for _, c := range rs.Template.Spec.Containers {
		if strings.Contains(strings.Join(append(append([]string(nil), c.Command...), c.Args...), " "), launcherModule) {
			return true
		}
	}
	return false
}
