// Package testutil builds PaddleJobs and pods fluently for unit, integration
// and end-to-end tests, so that a test reads like the scenario it checks:
//
//	job := testutil.MakePaddleJob("wd", "default").PS(2).Workers(3).Intranet(paddlev1.IntranetService).Obj()
//	pod := testutil.MakePod(job, paddlev1.ReplicaWorker, 0).Running("10.1.0.7").Obj()
//
// MakePaddleJob wraps pkg/client's JobBuilder, the one job builder, adding
// only what tests need; MakePod makes a pod as the operator names, labels and
// owns it, to seed a fake client with.
package testutil
