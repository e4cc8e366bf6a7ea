package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/paddlejob/paddlejob/examples/ctr/endpoint"
	"github.com/paddlejob/paddlejob/examples/ps"
)

// legacyFlags are the PaddlePaddle v1 cluster flags the pserver and train
// commands take, for launchers of plain Kubernetes Jobs.
type legacyFlags struct {
	pservers          string // pserver hosts, comma separated
	port              int
	portsNum          int
	portsNumForSparse int
	trainerID         int
	trainers          int // --num_gradient_servers
	nics              string
	comment           string
	local             int
	ip                string
}

// v1's default pserver port.
const defaultPServerPort = 7164

func (l *legacyFlags) register(fs *flag.FlagSet, tf *trainFlags) {
	fs.StringVar(&l.pservers, "pservers", "", "pserver hosts (IPs or names), comma separated, in shard order")
	fs.IntVar(&l.port, "port", defaultPServerPort, "port every pserver listens on")
	fs.IntVar(&l.portsNum, "ports_num", 1, "v1 ports per pserver; only --port is used")
	fs.IntVar(&l.portsNumForSparse, "ports_num_for_sparse", 0, "v1 sparse ports per pserver; sparse rows share --port")
	fs.IntVar(&l.trainerID, "trainer_id", 0, "this trainer's index")
	fs.IntVar(&l.trainers, "num_gradient_servers", 1, "number of trainers")
	fs.StringVar(&l.nics, "nics", "", "v1 network interface; unused, addresses come from --ip, POD_IP or --pservers")
	fs.StringVar(&l.comment, "comment", "", "free-form label, logged")
	fs.IntVar(&l.local, "local", -1, "1: train alone; 0: train with --pservers; -1: alone unless --pservers is given")
	fs.StringVar(&l.ip, "ip", "", "this pserver's host as listed in --pservers (default $POD_IP, else a local interface address found in --pservers)")
	fs.StringVar(&tf.output, "save_dir", tf.output, "v1 name of --output")
	fs.IntVar(&tf.passes, "num_passes", tf.passes, "v1 name of --passes")
}

// trainsAlone is --local=1, which is the default without --pservers.
func (l *legacyFlags) trainsAlone() bool {
	return l.local == 1 || (l.local == -1 && l.pservers == "")
}

// endpoints is every pserver's host:port.
func (l *legacyFlags) endpoints() ([]string, error) {
	hosts := endpoint.SplitList(l.pservers)
	if len(hosts) == 0 {
		return nil, usagef("--pservers is empty")
	}
	if l.port < 1 || l.port > 65535 {
		return nil, usagef("--port=%d is not a port", l.port)
	}
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = net.JoinHostPort(h, strconv.Itoa(l.port))
	}
	return out, nil
}

// legacyCommand is the parsed command line of pserver or train.
type legacyCommand struct {
	train   trainFlags
	legacy  legacyFlags
	ignored []string // unknown v1 flags, as given
}

// parseLegacyCommand parses a command line of known flags and unknown v1
// flags, which it sets aside as ignored.
func parseLegacyCommand(name string, args []string, stderr io.Writer) (*legacyCommand, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	c := &legacyCommand{}
	c.train.register(fs)
	c.legacy.register(fs, &c.train)
	known, ignored := splitUnknownFlags(fs, args)
	c.ignored = ignored
	if err := parseFlags(fs, known, stderr); err != nil {
		return nil, err
	}
	if l := c.legacy.local; l < -1 || l > 1 {
		return nil, usagef("--local=%d: want 0 or 1", l)
	}
	return c, nil
}

// reportIgnored says which flags have no effect: unknown ones, and v1
// settings this example has no use for.
func (c *legacyCommand) reportIgnored(name string, stderr io.Writer) {
	for _, arg := range c.ignored {
		fmt.Fprintf(stderr, "paddlejob-examples %s: ignoring flag %s (not used by this example)\n", name, arg)
	}
	l := c.legacy
	notes := []struct {
		set  bool
		note string
	}{
		{l.portsNum > 1, fmt.Sprintf("--ports_num=%d: every pserver serves dense and sparse parameters on --port alone", l.portsNum)},
		{l.portsNumForSparse > 0, fmt.Sprintf("--ports_num_for_sparse=%d: sparse rows are served on --port", l.portsNumForSparse)},
		{l.nics != "", fmt.Sprintf("--nics=%s: addresses come from --ip, POD_IP or --pservers, not from an interface name", l.nics)},
	}
	for _, n := range notes {
		if n.set {
			fmt.Fprintf(stderr, "paddlejob-examples %s: %s\n", name, n.note)
		}
	}
}

// splitUnknownFlags separates the flags fs defines from the others. An
// unknown flag without "=value" takes the next argument as its value unless
// that looks like a flag.
func splitUnknownFlags(fs *flag.FlagSet, args []string) (known, unknown []string) {
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" || !strings.HasPrefix(arg, "-") || arg == "-" {
			return append(known, args[i:]...), unknown
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if name == "h" || name == "help" {
			known = append(known, arg) // the flag package prints the usage
			continue
		}
		takesNext := !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-")
		if f := fs.Lookup(name); f != nil {
			known = append(known, arg)
			if takesNext && !isBoolFlag(f) {
				i++
				known = append(known, args[i])
			}
			continue
		}
		if takesNext {
			i++
			arg += " " + args[i]
		}
		unknown = append(unknown, arg)
	}
	return known, unknown
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// runPServerFlags runs a pserver from v1 flags.
func runPServerFlags(ctx context.Context, args []string, out streams) error {
	c, err := parseLegacyCommand("pserver", args, out.stderr)
	if err != nil {
		return err
	}
	c.reportIgnored("pserver", out.stderr)
	endpoints, err := c.legacy.endpoints()
	if err != nil {
		return err
	}
	index, err := ownPServerIndex(c.legacy.ip, os.Getenv("POD_IP"), endpoint.SplitList(c.legacy.pservers), localAddrs)
	if err != nil {
		return err
	}
	logger := newLogger(out.stderr, "ps", index)
	if c.legacy.comment != "" {
		logger.Printf("comment: %s", c.legacy.comment)
	}
	return ps.Serve(ctx, ps.ServerConfig{
		Endpoints: endpoints, Index: index, Trainers: c.legacy.trainers,
		JoinTimeout: c.train.connectTimeout, Log: logger,
	})
}

// ownPServerIndex finds this pserver's position in hosts: by the host named
// with --ip, else by POD_IP, else the first host that is one of this
// machine's interface addresses.
func ownPServerIndex(ip, podIP string, hosts []string, local func() ([]net.IP, error)) (int, error) {
	for _, self := range []struct{ source, host string }{{"--ip", ip}, {"POD_IP", podIP}} {
		if self.host == "" {
			continue
		}
		if i := endpoint.Index(hosts, self.host); i >= 0 {
			return i, nil
		}
		return 0, usagef("%s=%s is not in --pservers=%s", self.source, self.host, strings.Join(hosts, ","))
	}
	addrs, err := local()
	if err != nil {
		return 0, fmt.Errorf("list interface addresses: %w", err)
	}
	for i, h := range hosts {
		hostIP := net.ParseIP(h)
		for _, a := range addrs {
			if hostIP != nil && hostIP.Equal(a) {
				return i, nil
			}
		}
	}
	return 0, usagef("none of --pservers=%s is an address of this machine: set --ip or POD_IP", strings.Join(hosts, ","))
}

// localAddrs is every interface address of this machine.
func localAddrs() ([]net.IP, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var ips []net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			ips = append(ips, n.IP)
		}
	}
	return ips, nil
}

// runTrainFlags runs a trainer from v1 flags: with pservers, or alone with
// --local=1.
func runTrainFlags(ctx context.Context, args []string, out streams) error {
	c, err := parseLegacyCommand("train", args, out.stderr)
	if err != nil {
		return err
	}
	c.reportIgnored("train", out.stderr)
	if c.legacy.trainsAlone() {
		return trainCollective(ctx, out, &c.train, nil, 0, 0)
	}
	endpoints, err := c.legacy.endpoints()
	if err != nil {
		return err
	}
	id, trainers := c.legacy.trainerID, c.legacy.trainers
	if id < 0 || id >= trainers {
		return usagef("--trainer_id=%d is not in [0, --num_gradient_servers=%d)", id, trainers)
	}
	return trainWithPServers(ctx, out, &c.train, endpoints, id, trainers)
}
