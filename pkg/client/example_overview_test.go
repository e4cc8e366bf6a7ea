package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// A job's life through the SDK: find the cluster as kubectl does, create a
// parameter-server job, say why its pods wait for a node, and wait for its
// end. It needs a cluster, so it has no Output and `go test` only compiles
// it: the package's overview cannot drift from the API. The examples in
// example_test.go run against a real API server (go test -tags integration).
func Example() {
	ctx := context.Background()
	c, err := client.NewFromKubeconfig("", "")
	if err != nil {
		log.Fatal(err)
	}
	tmpl := client.Container("paddle", "registry.baidubce.com/paddle-operator/demo-wide-and-deep:v1")
	job, err := c.Create(ctx, client.NewJob("ctr", "default").PS(2, tmpl).Workers(3, tmpl).Intranet(paddlev1.IntranetService).Obj())
	if err != nil {
		log.Fatal(err)
	}
	pods, err := c.Pods(ctx, job.Namespace, job.Name)
	if err != nil {
		log.Fatal(err)
	}
	for _, u := range c.WhyPending(ctx, pods) {
		fmt.Println(u.Pod, u.String()) // ctr-worker-2 needs 5 CPU, the node has 2
	}
	job, err = c.WaitFor(ctx, job.Namespace, job.Name, client.Finished, 30*time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.Status.Phase) // Completed or Failed
}
