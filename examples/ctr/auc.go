package ctr

import (
	"math"
	"sort"
)

// AUC is the area under the ROC curve of scores against labels: the
// probability that a random clicked row scores above a random unclicked one,
// ties counting one half. It is NaN when either class is absent.
func AUC(scores []float64, labels []bool) float64 {
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return scores[order[a]] < scores[order[b]] })

	// Mann-Whitney: sum the (tie-averaged, 1-based) ranks of the positives.
	var positives, rankSum float64
	for lo := 0; lo < len(order); {
		hi := lo
		for hi < len(order) && scores[order[hi]] == scores[order[lo]] {
			hi++
		}
		meanRank := float64(lo+hi+1) / 2
		for _, i := range order[lo:hi] {
			if labels[i] {
				positives++
				rankSum += meanRank
			}
		}
		lo = hi
	}
	negatives := float64(len(scores)) - positives
	if positives == 0 || negatives == 0 {
		return math.NaN()
	}
	return (rankSum - positives*(positives+1)/2) / (positives * negatives)
}
