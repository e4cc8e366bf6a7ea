// Package client is the Go SDK for PaddleJobs: create (from a builder or a
// manifest), get, list, watch, wait for conditions, scale, read logs and
// delete.
//
//	c, err := client.NewFromKubeconfig("", "")
//	job, err := c.Create(ctx, client.NewJob("ctr", "default").PS(2, tmpl).Workers(3, tmpl).Obj())
//	job, err = c.WaitFor(ctx, "default", "ctr", client.Finished)
package client
