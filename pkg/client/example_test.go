//go:build integration

package client_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// The examples run against a real API server with the operator, started
// here; in a program, client.NewFromKubeconfig("", "") finds the cluster as
// kubectl does.
var c *client.Client

func TestMain(m *testing.M) {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	env, err := testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer env.Stop()
		opts := operator.DefaultOptions()
		opts.MetricsAddr, opts.ProbeAddr = "0", "0"
		opts.Webhook.Port = 0 // the webhook has tests of its own
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		mgr, err := operator.NewManager(ctx, env.Config, opts)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		go func() { _ = mgr.Start(ctx) }()
		if c, err = client.New(env.Config); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// Build a job from pod templates and submit it.
func ExampleClient_Create() {
	ctx := context.Background()
	image := "registry.baidubce.com/paddle-operator/demo-wide-and-deep:v1"
	job := client.NewJob("wide-and-deep", "default").
		PS(2, client.Container("paddle", image)).
		Workers(2, client.Container("paddle", image)).
		Intranet(paddlev1.IntranetService).
		Obj()
	created, err := c.Create(ctx, job)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Wait until the operator created every pod.
	created, err = c.WaitFor(ctx, created.Namespace, created.Name, client.ConditionTrue(paddlev1.JobCreated), time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	pods, _ := c.Pods(ctx, created.Namespace, created.Name)
	fmt.Println(created.Status.Mode, len(pods), "pods")
	for _, p := range pods {
		fmt.Println(p.Name)
	}
	// Output:
	// PS 4 pods
	// wide-and-deep-ps-0
	// wide-and-deep-ps-1
	// wide-and-deep-worker-0
	// wide-and-deep-worker-1
}

// Submit a parameter-server job from the original paddle.job SDK's
// parameters.
func ExampleTrainingJob() {
	job, err := client.TrainingJob{
		Name:       "paddle-job",
		Image:      "yancey1989/paddle-job",
		EntryPoint: "python train.py",
		WorkDir:    "/example/word2vec",
		CPU:        3,
		Memory:     "8G",
		PServers:   3,
		CephFS:     &client.CephFSVolume{Monitors: []string{"172.19.32.166:6789"}},
	}.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	created, err := c.Create(context.Background(), job)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(created.Name, created.Spec.PS.Replicas, "pservers,", created.Spec.Worker.Replicas, "trainers")
	// Output: paddle-job 3 pservers, 3 trainers
}

// Scale a running job's workers; the operator adds the pods and recomputes
// the endpoints.
func ExampleClient_Scale() {
	ctx := context.Background()
	job := client.NewJob("scaled", "default").Workers(2, client.Container("paddle", "trainer:v1")).Obj()
	if _, err := c.Create(ctx, job); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := c.Scale(ctx, "default", "scaled", paddlev1.ReplicaWorker, 3); err != nil {
		fmt.Println(err)
		return
	}
	err := c.Watch(ctx, "default", "scaled", func(s client.Snapshot) (bool, error) {
		return len(s.Pods) == 3, nil
	})
	fmt.Println("3 workers:", err == nil)
	// Output: 3 workers: true
}

// Every problem of a job's parameters, each naming its field.
func ExampleFieldError() {
	_, err := client.TrainingJob{Name: "MyJob", Image: "i", EntryPoint: "python train.py", CPU: 0, Memory: "12X"}.Build()
	fmt.Println(err)
	// Output:
	// Name "MyJob": must be lowercase letters, digits and '-', start with a letter and have at most 51 characters
	// CPU 0: must be at least 1
	// Memory "12X": must be a plain integer with one of the suffixes E, P, T, G, M, K (powers of 1000, for example 8G) or Ei, Pi, Ti, Gi, Mi, Ki (powers of 1024, for example 8Gi)
}
