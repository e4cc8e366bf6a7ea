package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/paddlejob/paddlejob/examples/collective"
	"github.com/paddlejob/paddlejob/examples/ctr"
	"github.com/paddlejob/paddlejob/examples/ctr/endpoint"
	"github.com/paddlejob/paddlejob/examples/ps"
)

// env reads the operator's environment contract.
type env func(name string) string

// first is the value of the first of names that is set.
func (e env) first(names ...string) (name, value string) {
	for _, n := range names {
		if v := e(n); v != "" {
			return n, v
		}
	}
	return "", ""
}

// intOf is the first of names that is set, as an int; fallback when none is.
func (e env) intOf(fallback int, names ...string) (int, error) {
	name, v := e.first(names...)
	if name == "" {
		return fallback, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, usagef("%s=%q is not a non-negative integer", name, v)
	}
	return n, nil
}

// role is PSERVER or TRAINER.
func (e env) role() (string, error) {
	name, v := e.first("PADDLE_TRAINING_ROLE", "TRAINING_ROLE")
	switch role := strings.ToUpper(v); role {
	case "PSERVER", "TRAINER":
		return role, nil
	case "":
		return "", usagef("PADDLE_TRAINING_ROLE is not set: want PSERVER or TRAINER")
	default:
		return "", usagef("%s=%q: want PSERVER or TRAINER", name, v)
	}
}

// self is this pod's endpoint, POD_IP:PADDLE_PORT.
func (e env) self() (string, error) {
	ip, port := e("POD_IP"), e("PADDLE_PORT")
	if ip == "" || port == "" {
		return "", usagef("POD_IP and PADDLE_PORT must both be set (POD_IP=%q PADDLE_PORT=%q)", ip, port)
	}
	return ip + ":" + port, nil
}

// list is the entries of an endpoint list variable.
func (e env) list(name string) []string { return endpoint.SplitList(e(name)) }

// trainers is the number of workers.
func (e env) trainers() (int, error) {
	fallback := len(e.list("PADDLE_TRAINER_ENDPOINTS"))
	n, err := e.intOf(fallback, "PADDLE_TRAINERS_NUM", "PADDLE_TRAINER_NUM", "TRAINERS")
	if err == nil && n < 1 {
		err = usagef("PADDLE_TRAINERS_NUM is not set or 0: the number of trainers is unknown")
	}
	return n, err
}

// pservers is the pserver endpoint list.
func (e env) pservers() ([]string, error) {
	list := e.list("PADDLE_PSERVERS_IP_PORT_LIST")
	if len(list) == 0 {
		return nil, usagef("PADDLE_PSERVERS_IP_PORT_LIST is empty: wide-and-deep needs parameter servers (use collective without them)")
	}
	return list, nil
}

// runWideAndDeep runs the pod's role of a parameter-server job.
func runWideAndDeep(ctx context.Context, args []string, out streams) error {
	fs := flag.NewFlagSet("wide-and-deep", flag.ContinueOnError)
	var tf trainFlags
	tf.register(fs)
	if err := parseFlags(fs, args, out.stderr); err != nil {
		return err
	}
	e := env(os.Getenv)
	role, err := e.role()
	if err != nil {
		return err
	}
	pservers, err := e.pservers()
	if err != nil {
		return err
	}
	trainers, err := e.trainers()
	if err != nil {
		return err
	}
	if role == "PSERVER" {
		self, err := e.self()
		if err != nil {
			return err
		}
		index := endpoint.Index(pservers, self)
		if index < 0 {
			return usagef("this pserver's endpoint %s (POD_IP:PADDLE_PORT) is not in PADDLE_PSERVERS_IP_PORT_LIST=%s",
				self, strings.Join(pservers, ","))
		}
		return ps.Serve(ctx, ps.ServerConfig{
			Endpoints: pservers, Index: index, Trainers: trainers,
			JoinTimeout: tf.connectTimeout, Log: newLogger(out.stderr, "ps", index),
		})
	}
	id, err := e.intOf(-1, "PADDLE_TRAINER_ID", "TRAINER_ID")
	switch {
	case err != nil:
		return err
	case id == -1:
		return usagef("PADDLE_TRAINER_ID is not set")
	case id >= trainers:
		return usagef("PADDLE_TRAINER_ID=%d is not in [0, %d)", id, trainers)
	}
	return trainWithPServers(ctx, out, &tf, pservers, id, trainers)
}

func trainWithPServers(ctx context.Context, out streams, tf *trainFlags, pservers []string, id, trainers int) error {
	job, err := tf.job(trainers, id)
	if err != nil {
		return err
	}
	result, err := ps.Train(ctx, ps.TrainerConfig{
		PServers: pservers, TrainerID: id, Trainers: trainers, Job: job,
		ConnectTimeout: tf.connectTimeout, Log: newLogger(out.stderr, "trainer", id),
	})
	return report(out.stdout, result, err)
}

// report prints worker 0's summary line.
func report(stdout io.Writer, result *ctr.Result, err error) error {
	if err != nil {
		return err
	}
	if result != nil {
		fmt.Fprintln(stdout, result)
	}
	return nil
}

// runCollective runs one worker of a collective job. With a membership
// directory it is elastic; otherwise the endpoint list of the environment
// fixes the ring, and with no list it trains alone.
func runCollective(ctx context.Context, args []string, out streams) error {
	fs := flag.NewFlagSet("collective", flag.ContinueOnError)
	var tf trainFlags
	tf.register(fs)
	var cf collectiveFlags
	cf.register(fs)
	if err := parseFlags(fs, args, out.stderr); err != nil {
		return err
	}
	e := env(os.Getenv)
	if role, _ := e.role(); role == "PSERVER" {
		return usagef("PADDLE_TRAINING_ROLE=PSERVER: collective jobs have no parameter servers (use wide-and-deep)")
	}
	membership, err := cf.membership(fs)
	if err != nil {
		return err
	}
	if membership != "" {
		return trainElastic(ctx, out, &tf, &cf, membership, e)
	}
	endpoints := e.list("PADDLE_TRAINER_ENDPOINTS")
	rank, err := collectiveRank(e, endpoints)
	if err != nil {
		return err
	}
	return trainCollective(ctx, out, &tf, endpoints, rank, cf.passDelay)
}

// collectiveRank is this worker's rank, checked against the endpoint list.
func collectiveRank(e env, endpoints []string) (int, error) {
	current := e("PADDLE_CURRENT_ENDPOINT")
	if current == "" && e("POD_IP") != "" {
		current, _ = e.self()
	}
	fallback := 0
	if current != "" && len(endpoints) > 0 {
		fallback = endpoint.Index(endpoints, current)
	}
	rank, err := e.intOf(fallback, "PADDLE_TRAINER_ID", "TRAINER_ID")
	if err != nil {
		return 0, err
	}
	workers := max(len(endpoints), 1)
	if n, err := e.intOf(workers, "PADDLE_TRAINERS_NUM", "TRAINERS"); err != nil {
		return 0, err
	} else if n != workers {
		return 0, usagef("PADDLE_TRAINERS_NUM=%d but PADDLE_TRAINER_ENDPOINTS lists %d workers", n, workers)
	}
	switch {
	case rank < 0 || rank >= workers:
		return 0, usagef("this worker's rank %d (PADDLE_TRAINER_ID or PADDLE_CURRENT_ENDPOINT) is not in [0, %d)", rank, workers)
	case len(endpoints) > 1 && current != "" && current != endpoints[rank]:
		return 0, usagef("PADDLE_CURRENT_ENDPOINT=%s but entry %d of PADDLE_TRAINER_ENDPOINTS is %s", current, rank, endpoints[rank])
	}
	return rank, nil
}

func trainCollective(ctx context.Context, out streams, tf *trainFlags, endpoints []string, rank int, passDelay time.Duration) error {
	job, err := tf.job(max(len(endpoints), 1), rank)
	if err != nil {
		return err
	}
	result, err := collective.Train(ctx, collective.Config{
		Endpoints: endpoints, Rank: rank, Job: job, ConnectTimeout: tf.connectTimeout,
		PassDelay: passDelay, Log: newLogger(out.stderr, "worker", rank),
	})
	return report(out.stdout, result, err)
}
