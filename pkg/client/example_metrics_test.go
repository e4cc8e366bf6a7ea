package client_test

import (
	"fmt"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// The status holds the metrics as decimal strings; LatestMetrics gives
// numbers, in the order the program first reported them.
func ExampleLatestMetrics() {
	job := &paddlev1.PaddleJob{Status: paddlev1.PaddleJobStatus{Progress: &paddlev1.JobProgress{
		Metrics: []paddlev1.ProgressMetric{{Name: "loss", Value: "0.327435"}, {Name: "lr", Value: "1.5e-05"}},
	}}}
	for _, m := range client.LatestMetrics(job) {
		fmt.Printf("%s %g\n", m.Name, m.Value*2)
	}
	if loss, ok := client.LatestMetric(job, "loss"); ok && loss < 0.5 {
		fmt.Println("loss below 0.5")
	}
	// Output:
	// loss 0.65487
	// lr 3e-05
	// loss below 0.5
}
