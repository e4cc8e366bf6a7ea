// Package client is the Go SDK for PaddleJobs: create (from a builder, a
// manifest, or seed 002's parameters with TrainingJob), get, list (by label
// selector), watch, wait for conditions, scale, suspend and resume, read
// logs and events, explain why pods stay Pending, and delete.
//
//	c, err := client.NewFromKubeconfig("", "")
//	job, err := c.Create(ctx, client.NewJob("ctr", "default").PS(2, tmpl).Workers(3, tmpl).Obj())
//	job, err = c.WaitFor(ctx, "default", "ctr", client.Finished, 0)
//	for _, u := range c.WhyPending(ctx, pods) { fmt.Println(u.Pod, u) } // "needs 5 CPU, the node has 2"
package client
