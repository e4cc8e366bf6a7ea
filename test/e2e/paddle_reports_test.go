package e2e

import (
	"regexp"
	"strconv"
	"testing"
)

// What the example programs report, as Paddle told them: their role, index
// and world, and what they learned. Tests assert these rather than what the
// operator wrote into the pods.

var (
	// wide_and_deep/train.py
	pserverLine = regexp.MustCompile(`role=PSERVER index=(\d+) servers=(\d+) endpoint=(\S+)`)
	trainerLine = regexp.MustCompile(`role=TRAINER index=(\d+) trainers=(\d+) servers=(\d+) pservers=(\S*)`)
	psFinalLine = regexp.MustCompile(`final: trainer=(\d+) trainers=(\d+) test_auc=([0-9.]+) optimal_auc=([0-9.]+)`)
	// resnet/train_fleet.py
	rankLine        = regexp.MustCompile(`role=TRAINER rank=(\d+) world_size=(\d+) endpoint=(\S*)`)
	epochLine       = regexp.MustCompile(`epoch (\d+)/(\d+): loss=([0-9.]+) test_accuracy=([0-9.]+) world_size=(\d+)`)
	collectiveFinal = regexp.MustCompile(`final: rank=0 world_size=(\d+) loss=([0-9.]+) test_accuracy=([0-9.]+)`)
)

// psRole is what a process of the wide & deep example reported.
type psRole struct {
	Role           string // PSERVER or TRAINER
	Index, Count   int    // its index and the number of its role's processes
	Servers        int    // the pservers a trainer sees
	Endpoint       string // a pserver's own endpoint
	PServerList    string // the pservers a trainer sees
	HasFinal       bool
	AUC, Optimal   float64
	FinalTrainers  int
	FinalTrainerID int
}

func atoi(s string) int     { n, _ := strconv.Atoi(s); return n }
func atof(s string) float64 { f, _ := strconv.ParseFloat(s, 64); return f }

// parsePSRole reads a wide & deep process's report from its log.
func parsePSRole(t *testing.T, pod, log string) psRole {
	t.Helper()
	var r psRole
	switch m := pserverLine.FindStringSubmatch(log); {
	case m != nil:
		r = psRole{Role: "PSERVER", Index: atoi(m[1]), Count: atoi(m[2]), Endpoint: m[3]}
	default:
		m := trainerLine.FindStringSubmatch(log)
		if m == nil {
			t.Fatalf("%s reported no role:\n%s", pod, tail(log))
		}
		r = psRole{Role: "TRAINER", Index: atoi(m[1]), Count: atoi(m[2]), Servers: atoi(m[3]), PServerList: m[4]}
	}
	if m := psFinalLine.FindStringSubmatch(log); m != nil {
		r.HasFinal, r.FinalTrainerID, r.FinalTrainers, r.AUC, r.Optimal = true, atoi(m[1]), atoi(m[2]), atof(m[3]), atof(m[4])
	}
	return r
}

// collectiveReport is what rank 0 of the ResNet example reported.
type collectiveReport struct {
	Epochs              []epochReport
	WorldSize           int
	FinalLoss, Accuracy float64
}

type epochReport struct {
	Epoch, Of, WorldSize int
	Loss, Accuracy       float64
}

func parseCollective(t *testing.T, pod, log string) collectiveReport {
	t.Helper()
	m := collectiveFinal.FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("%s reported no final line:\n%s", pod, tail(log))
	}
	r := collectiveReport{WorldSize: atoi(m[1]), FinalLoss: atof(m[2]), Accuracy: atof(m[3])}
	for _, e := range epochLine.FindAllStringSubmatch(log, -1) {
		r.Epochs = append(r.Epochs, epochReport{Epoch: atoi(e[1]), Of: atoi(e[2]), Loss: atof(e[3]), Accuracy: atof(e[4]), WorldSize: atoi(e[5])})
	}
	return r
}

// ranksReported are the ranks and world sizes the processes of a collective
// job reported, by rank.
func ranksReported(t *testing.T, logs map[string]string) map[int]int {
	t.Helper()
	out := map[int]int{}
	for pod, log := range logs {
		ms := rankLine.FindAllStringSubmatch(log, -1)
		if ms == nil {
			t.Errorf("%s reported no rank:\n%s", pod, tail(log))
			continue
		}
		m := ms[len(ms)-1] // the last start, after any restart
		out[atoi(m[1])] = atoi(m[2])
	}
	return out
}

// tail is the end of a log, for failure messages.
func tail(log string) string {
	const n = 3000
	if len(log) > n {
		return "…" + log[len(log)-n:]
	}
	return log
}
