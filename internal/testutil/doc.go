// Package testutil builds PaddleJobs and pods fluently for unit, integration
// and end-to-end tests, so that a test reads like the scenario it checks:
//
//	job := testutil.MakePaddleJob("wd", "default").PS(2).Workers(3).Intranet(paddlev1.IntranetService).Obj()
package testutil
