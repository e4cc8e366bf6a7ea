package launcher

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
)

// DefaultPort is the pserver's port in fleet mode when CONF_PADDLE_PORT is
// not set: the one the three-node tutorial uses.
const DefaultPort = 7164

// The roles, as TRAINING_ROLE and PADDLE_TRAINING_ROLE name them.
const (
	rolePServer = "PSERVER"
	roleTrainer = "TRAINER"
)

// FleetConfig is the validated environment of a pod that runs a pserver
// and a trainer in fleet mode.
type FleetConfig struct {
	JobName     string
	JobPath     string
	PServerPort int // CONF_PADDLE_PORT, default DefaultPort
	// TrainerPort is the first port above the pserver's range:
	// CONF_PADDLE_PORT + CONF_PADDLE_PORTS_NUM + CONF_PADDLE_PORTS_NUM_SPARSE
	// (the counts default to 1 and 0).
	TrainerPort int
	GradientNum int // CONF_PADDLE_GRADIENT_NUM, 0 when not set
}

// FleetConfig validates what fleet mode reads, reporting every missing or
// invalid variable by name. CONF_PADDLE_NIC is not used: Paddle 2.x binds
// to POD_IP.
func (e Env) FleetConfig() (FleetConfig, error) {
	var c envCheck
	cfg := FleetConfig{
		JobName:     c.required("JOB_NAME", e.JobName),
		JobPath:     c.required("JOB_PATH", e.JobPath),
		PServerPort: c.optionalNumber("CONF_PADDLE_PORT", e.Port, DefaultPort, 1, maxPort),
		GradientNum: c.optionalNumber("CONF_PADDLE_GRADIENT_NUM", e.GradientNum, 0, 1, maxGradientNum),
	}
	dense := c.optionalNumber("CONF_PADDLE_PORTS_NUM", e.PortsNum, 1, 1, maxPort)
	sparse := c.optionalNumber("CONF_PADDLE_PORTS_NUM_SPARSE", e.PortsNumSparse, 0, 0, maxPort)
	cfg.TrainerPort = cfg.PServerPort + dense + sparse
	if len(c.problems) == 0 && cfg.TrainerPort > maxPort {
		c.problems = append(c.problems, fmt.Sprintf("CONF_PADDLE_PORT=%d with %d dense and %d sparse ports leaves no port for the trainer (it takes port %d)",
			cfg.PServerPort, dense, sparse, cfg.TrainerPort))
	}
	if err := c.err(); err != nil {
		return FleetConfig{}, err
	}
	return cfg, nil
}

// fleetJob is what fleet mode tells every process about the job.
type fleetJob struct {
	jobID       string       // PADDLE_JOB_ID: <namespace>-<job>
	outputDir   string       // PADDLE_OUTPUT_DIR; "" when unknown
	pods        []netip.Addr // trainer-id order; pod i runs pserver i and trainer i
	pserverPort int
	trainerPort int
}

// jobID is PADDLE_JOB_ID: the operator's <namespace>-<job>.
func jobID(namespace, job string) string { return namespace + "-" + job }

// endpoint is "ip:port" written so that POD_IP + ":" + PADDLE_PORT equals
// it character for character (Paddle finds a pserver's index that way), so
// IPv6 addresses are not bracketed.
func endpoint(addr netip.Addr, port int) string {
	return addr.String() + ":" + strconv.Itoa(port)
}

func endpoints(addrs []netip.Addr, port int) string {
	eps := make([]string, len(addrs))
	for i, a := range addrs {
		eps[i] = endpoint(a, port)
	}
	return strings.Join(eps, ",")
}

// env is what the process of role (rolePServer or roleTrainer) on pod id
// gets, in a fixed order.
func (j fleetJob) env(role string, id int) []string {
	port := j.trainerPort
	if role == rolePServer {
		port = j.pserverPort
	}
	n := strconv.Itoa(len(j.pods))
	vars := []string{
		"TRAINING_ROLE=" + role,
		"PADDLE_TRAINING_ROLE=" + role,
		"PADDLE_PSERVERS_IP_PORT_LIST=" + endpoints(j.pods, j.pserverPort),
		"PADDLE_TRAINER_ENDPOINTS=" + endpoints(j.pods, j.trainerPort),
		"PADDLE_TRAINERS_NUM=" + n,
		"PADDLE_TRAINER_ID=" + strconv.Itoa(id),
		"POD_IP=" + j.pods[id].String(),
		"PADDLE_PORT=" + strconv.Itoa(port),
		"TRAINER_ID=" + strconv.Itoa(id),
		"TRAINERS=" + n,
		"PADDLE_JOB_ID=" + j.jobID,
	}
	if j.outputDir != "" {
		vars = append(vars, "PADDLE_OUTPUT_DIR="+j.outputDir)
	}
	return vars
}

// fleetAloneEnv is what a trainer training alone (--no-pserver, a one-pod
// Job) gets: trainer 0 of 1, and no pserver list, so that
// PaddleCloudRoleMaker falls back to non-distributed training. jobID and
// outputDir are left out when empty.
func fleetAloneEnv(jobID, outputDir string) []string {
	vars := []string{
		"TRAINING_ROLE=" + roleTrainer,
		"PADDLE_TRAINING_ROLE=" + roleTrainer,
		"PADDLE_TRAINERS_NUM=1",
		"PADDLE_TRAINER_ID=0",
		"TRAINER_ID=0",
		"TRAINERS=1",
	}
	if jobID != "" {
		vars = append(vars, "PADDLE_JOB_ID="+jobID)
	}
	if outputDir != "" {
		vars = append(vars, "PADDLE_OUTPUT_DIR="+outputDir)
	}
	return vars
}

// fleetVars are the variables fleet mode manages. A value the launcher's
// own environment holds (from a pod template, say) is not passed on where
// fleet mode sets none: a stale PADDLE_PSERVERS_IP_PORT_LIST would make a
// lone trainer wait for pservers that do not exist. POD_IP is the
// exception: it is the pod's, and a lone trainer keeps it.
var fleetVars = []string{
	"TRAINING_ROLE", "PADDLE_TRAINING_ROLE", "PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_TRAINER_ENDPOINTS",
	"PADDLE_TRAINERS_NUM", "PADDLE_TRAINER_ID", "PADDLE_PORT", "TRAINER_ID", "TRAINERS",
	"PADDLE_JOB_ID", "PADDLE_OUTPUT_DIR",
}

// fleetChildEnv is the launcher's environment without the variables fleet
// mode manages, plus vars and the legacy IR (legacyIR).
func fleetChildEnv(vars []string) []string {
	return legacyIR(withVars(os.Environ(), fleetVars, vars))
}

// legacyIR adds FLAGS_enable_pir_api=0 to env unless it sets the flag:
// fleet's parameter-server passes fail on Paddle 3.x's default PIR programs
// (the operator does the same for its parameter-server pods, see
// internal/operator/controller/tuning.go); releases before PIR ignore it.
func legacyIR(env []string) []string {
	const flag = "FLAGS_enable_pir_api"
	for _, v := range env {
		if name, _, _ := strings.Cut(v, "="); name == flag {
			return env
		}
	}
	return append(env, flag+"=0")
}

// withVars is base without the variables named in drop or set by vars,
// followed by vars.
func withVars(base, drop, vars []string) []string {
	names := slices.Clone(drop)
	for _, v := range vars {
		name, _, _ := strings.Cut(v, "=")
		names = append(names, name)
	}
	out := make([]string, 0, len(base)+len(vars))
	for _, v := range base {
		name, _, _ := strings.Cut(v, "=")
		if !slices.Contains(names, name) {
			out = append(out, v)
		}
	}
	return append(out, vars...)
}
