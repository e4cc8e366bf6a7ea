package ctr

import "math"

// Meter gathers a pass's predictions for its mean loss and AUC.
type Meter struct {
	lossSum float64
	scores  []float64
	labels  []bool
}

// Add records one prediction and its loss.
func (m *Meter) Add(loss, prob float64, clicked bool) {
	m.lossSum += loss
	m.scores = append(m.scores, prob)
	m.labels = append(m.labels, clicked)
}

// Loss is the mean loss so far, NaN before any prediction.
func (m *Meter) Loss() float64 {
	if len(m.scores) == 0 {
		return math.NaN()
	}
	return m.lossSum / float64(len(m.scores))
}

// AUC of the predictions so far.
func (m *Meter) AUC() float64 { return AUC(m.scores, m.labels) }

// Reset forgets every prediction.
func (m *Meter) Reset() {
	m.lossSum = 0
	m.scores = m.scores[:0]
	m.labels = m.labels[:0]
}
