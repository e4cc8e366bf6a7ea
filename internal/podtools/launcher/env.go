package launcher

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Env is the container environment the launcher reads: the three-node tutorial's variables,
// as given (trimmed). Validation happens when a mode needs a value.
type Env struct {
	JobName        string // JOB_NAME
	Namespace      string // JOB_NAMESPACE
	JobPath        string // JOB_PATH: where the shared volume is mounted
	TrainConfigDir string // TRAIN_CONFIG_DIR: under $JOB_PATH/$JOB_NAME
	NIC            string // CONF_PADDLE_NIC
	Port           string // CONF_PADDLE_PORT
	PortsNum       string // CONF_PADDLE_PORTS_NUM
	PortsNumSparse string // CONF_PADDLE_PORTS_NUM_SPARSE
	GradientNum    string // CONF_PADDLE_GRADIENT_NUM
	Parallelism    string // PADDLE_PARALLELISM
	PodIP          string // POD_IP
	Hostname       string // HOSTNAME
	Kubeconfig     string // KUBECONFIG
}

// ReadEnv reads the launcher's variables through getenv (os.Getenv in
// production).
func ReadEnv(getenv func(string) string) Env {
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	return Env{
		JobName:        get("JOB_NAME"),
		Namespace:      get("JOB_NAMESPACE"),
		JobPath:        get("JOB_PATH"),
		TrainConfigDir: get("TRAIN_CONFIG_DIR"),
		NIC:            get("CONF_PADDLE_NIC"),
		Port:           get("CONF_PADDLE_PORT"),
		PortsNum:       get("CONF_PADDLE_PORTS_NUM"),
		PortsNumSparse: get("CONF_PADDLE_PORTS_NUM_SPARSE"),
		GradientNum:    get("CONF_PADDLE_GRADIENT_NUM"),
		Parallelism:    get("PADDLE_PARALLELISM"),
		PodIP:          get("POD_IP"),
		Hostname:       get("HOSTNAME"),
		Kubeconfig:     getenv("KUBECONFIG"),
	}
}

// ClusterConfig is the validated environment of a pod that runs a pserver
// and a trainer.
type ClusterConfig struct {
	JobName        string
	JobPath        string
	NIC            string
	Port           int
	PortsNum       int
	PortsNumSparse int
	GradientNum    int
}

// ClusterConfig validates the variables the pserver and trainer flags are
// built from, reporting every missing or invalid one by name.
func (e Env) ClusterConfig() (ClusterConfig, error) {
	var c envCheck
	cfg := ClusterConfig{
		JobName:        c.required("JOB_NAME", e.JobName),
		JobPath:        c.required("JOB_PATH", e.JobPath),
		NIC:            c.required("CONF_PADDLE_NIC", e.NIC),
		Port:           c.number("CONF_PADDLE_PORT", e.Port, 1, maxPort),
		PortsNum:       c.number("CONF_PADDLE_PORTS_NUM", e.PortsNum, 1, maxPort),
		PortsNumSparse: c.number("CONF_PADDLE_PORTS_NUM_SPARSE", e.PortsNumSparse, 0, maxPort),
		GradientNum:    c.number("CONF_PADDLE_GRADIENT_NUM", e.GradientNum, 1, maxGradientNum),
	}
	if len(c.problems) == 0 && cfg.Port+cfg.PortsNum+cfg.PortsNumSparse-1 > maxPort {
		c.problems = append(c.problems, fmt.Sprintf("CONF_PADDLE_PORT=%d with %d dense and %d sparse ports runs past port %d",
			cfg.Port, cfg.PortsNum, cfg.PortsNumSparse, maxPort))
	}
	if err := c.err(); err != nil {
		return ClusterConfig{}, err
	}
	return cfg, nil
}

const (
	maxPort        = 65535
	maxGradientNum = 1 << 20
)

// envCheck collects the problems of several variables, so that all are
// reported at once.
type envCheck struct{ problems []string }

// required is value, noting a problem when it is empty.
func (c *envCheck) required(name, value string) string {
	if value == "" {
		c.problems = append(c.problems, name+" is not set")
	}
	return value
}

// number parses a required integer from min to max.
func (c *envCheck) number(name, value string, min, max int) int {
	if c.required(name, value) == "" {
		return 0
	}
	return c.parse(name, value, min, max)
}

// optionalNumber parses an integer from min to max, def when value is empty.
func (c *envCheck) optionalNumber(name, value string, def, min, max int) int {
	if value == "" {
		return def
	}
	return c.parse(name, value, min, max)
}

func (c *envCheck) parse(name, value string, min, max int) int {
	n, err := strconv.Atoi(value)
	if err != nil || n < min || n > max {
		c.problems = append(c.problems, fmt.Sprintf("%s=%q: want an integer from %d to %d", name, value, min, max))
	}
	return n
}

func (c *envCheck) err() error {
	if len(c.problems) == 0 {
		return nil
	}
	return fmt.Errorf("invalid environment: %s", strings.Join(c.problems, "; "))
}

// ParallelismOverride is PADDLE_PARALLELISM, or 0 when it is not set.
func (e Env) ParallelismOverride() (int, error) {
	if e.Parallelism == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(e.Parallelism)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("PADDLE_PARALLELISM=%q: want a positive integer", e.Parallelism)
	}
	return n, nil
}

// PodAddr is POD_IP, or the zero Addr when it is not set.
func (e Env) PodAddr() (netip.Addr, error) {
	if e.PodIP == "" {
		return netip.Addr{}, nil
	}
	addr, err := netip.ParseAddr(e.PodIP)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("POD_IP=%q is not an IP address", e.PodIP)
	}
	return addr.Unmap(), nil
}
