package launcher

import (
	"fmt"
	"net/netip"
	"path"
	"strconv"
	"strings"
)

// legacyComment is the --comment start_paddle.py gives both processes, by
// which its operators recognised Paddle processes.
const legacyComment = "paddle_process_by_paddle"

// flag is one generated --name=value argument.
type flag struct{ name, value string }

func (f flag) String() string { return "--" + f.name + "=" + f.value }

// commonFlags are the flags the pserver and the trainer share, in this order:
// --nics --port --ports_num --ports_num_for_sparse --num_gradient_servers
// --pservers --comment. The pserver list is in trainer-id order.
func commonFlags(cfg ClusterConfig, pservers []netip.Addr) []flag {
	return []flag{
		{"nics", cfg.NIC},
		{"port", strconv.Itoa(cfg.Port)},
		{"ports_num", strconv.Itoa(cfg.PortsNum)},
		{"ports_num_for_sparse", strconv.Itoa(cfg.PortsNumSparse)},
		{"num_gradient_servers", strconv.Itoa(cfg.GradientNum)},
		{"pservers", joinAddrs(pservers)},
		{"comment", legacyComment},
	}
}

// outputDir is where the trainer saves models and the launcher writes the
// per-node logs: $JOB_PATH/$JOB_NAME/output.
func outputDir(jobPath, jobName string) string {
	return path.Join(jobPath, jobName, "output")
}

// pserverArgs are the pserver's arguments: the common flags.
func pserverArgs(cfg ClusterConfig, pservers []netip.Addr) []string {
	return flagStrings(commonFlags(cfg, pservers))
}

// trainerArgs are the trainer's arguments: the common flags, the user's extra
// arguments in the order given, then --trainer_id and --save_dir, as
// start_paddle.py ordered them.
func trainerArgs(cfg ClusterConfig, pservers []netip.Addr, id int, extra []string) ([]string, error) {
	tail := []flag{
		{"trainer_id", strconv.Itoa(id)},
		{"save_dir", outputDir(cfg.JobPath, cfg.JobName)},
	}
	generated := append(commonFlags(cfg, pservers), tail...)
	kept, err := withoutRepeats(extra, generated)
	if err != nil {
		return nil, err
	}
	args := flagStrings(commonFlags(cfg, pservers))
	args = append(args, kept...)
	return append(args, flagStrings(tail)...), nil
}

// singleTrainerArgs are the trainer's arguments when it trains alone (seed
// 000): --trainer_id=0 and --save_dir when JOB_PATH and JOB_NAME are set,
// after the extra arguments; otherwise the extra arguments alone.
func singleTrainerArgs(env Env, extra []string) ([]string, error) {
	if env.JobPath == "" || env.JobName == "" {
		return extra, nil
	}
	tail := []flag{{"trainer_id", "0"}, {"save_dir", outputDir(env.JobPath, env.JobName)}}
	kept, err := withoutRepeats(extra, tail)
	if err != nil {
		return nil, err
	}
	return append(kept, flagStrings(tail)...), nil
}

// withoutRepeats drops extra arguments that repeat a generated flag with the
// same value (the three-node tutorial's start.sh passes --ports_num=$CONF_PADDLE_PORTS_NUM
// again) and rejects those that would contradict one, since Paddle would
// silently take the last.
func withoutRepeats(extra []string, generated []flag) ([]string, error) {
	values := map[string]string{}
	for _, f := range generated {
		values[f.name] = f.value
	}
	var kept []string
	for _, arg := range extra {
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		want, clash := values[name]
		switch {
		case !strings.HasPrefix(arg, "-") || !clash:
			kept = append(kept, arg)
		case hasValue && value == want:
			// a repeat of what the launcher passes anyway
		default:
			return nil, fmt.Errorf("extra argument %q contradicts the generated --%s=%s", arg, name, want)
		}
	}
	return kept, nil
}

func flagStrings(flags []flag) []string {
	s := make([]string, len(flags))
	for i, f := range flags {
		s[i] = f.String()
	}
	return s
}
