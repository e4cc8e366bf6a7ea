package ctr

import "math"

// Model computes the wide & deep click model:
//
//	logit = bias + Σ_fields wide[bucket] + denseWide·dense
//	      + w2·tanh(W1·[embed[bucket_1] … embed[bucket_10], dense] + b1)
//	p     = sigmoid(logit), loss = log loss of p against the label.
//
// The wide part learns each category's own effect; the deep part learns how
// features interact. A Model owns scratch buffers, so one goroutine uses it.
type Model struct {
	cfg    Config
	lay    layout
	input  []float64 // deep input of the current row
	hidden []float64 // tanh activations
	dInput []float64 // gradient of the loss with respect to input
}

// NewModel returns a model of shape cfg.
func NewModel(cfg Config) *Model {
	lay := cfg.layout()
	return &Model{
		cfg:    cfg,
		lay:    lay,
		input:  make([]float64, lay.inputs),
		hidden: make([]float64, cfg.Hidden),
		dInput: make([]float64, lay.inputs),
	}
}

// Predict is the click probability of r under p.
func (m *Model) Predict(p Params, r *Row) float64 {
	buckets := m.cfg.RowBuckets(r)
	return sigmoid(m.forward(p, r, &buckets))
}

// forward fills the scratch buffers for r and returns the logit.
func (m *Model) forward(p Params, r *Row, buckets *[NumSparse]uint32) float64 {
	l, e, d := m.lay, m.cfg.EmbedDim, p.Dense
	logit := d[l.bias]
	for f, b := range buckets {
		row := p.Rows.Row(b)
		logit += row[0]
		copy(m.input[f*e:(f+1)*e], row[1:])
	}
	for j, x := range r.Dense {
		logit += d[l.denseWide+j] * x
		m.input[NumSparse*e+j] = x
	}
	for h := range m.hidden {
		w := d[l.w1+h*l.inputs : l.w1+(h+1)*l.inputs]
		a := d[l.b1+h]
		for i, x := range m.input {
			a += w[i] * x
		}
		m.hidden[h] = math.Tanh(a)
		logit += d[l.w2+h] * m.hidden[h]
	}
	return logit
}

// Accumulate adds the gradient of r's log loss under p to grad, which has
// the shape of p and must hold a row for every bucket of r. It returns the
// loss and the predicted click probability.
func (m *Model) Accumulate(p Params, r *Row, grad Params) (loss, prob float64) {
	buckets := m.cfg.RowBuckets(r)
	logit := m.forward(p, r, &buckets)
	prob = sigmoid(logit)
	y := 0.0
	if r.Clicked {
		y = 1
	}
	// log(1+e^z) - y·z, written to stay finite for large |z|.
	loss = math.Max(logit, 0) + math.Log1p(math.Exp(-math.Abs(logit))) - y*logit

	l, e, d, g := m.lay, m.cfg.EmbedDim, p.Dense, grad.Dense
	dLogit := prob - y
	g[l.bias] += dLogit
	for j, x := range r.Dense {
		g[l.denseWide+j] += dLogit * x
	}
	clear(m.dInput)
	for h, act := range m.hidden {
		g[l.w2+h] += dLogit * act
		dA := dLogit * d[l.w2+h] * (1 - act*act)
		if dA == 0 {
			continue
		}
		g[l.b1+h] += dA
		w := d[l.w1+h*l.inputs : l.w1+(h+1)*l.inputs]
		gw := g[l.w1+h*l.inputs : l.w1+(h+1)*l.inputs]
		for i, x := range m.input {
			gw[i] += dA * x
			m.dInput[i] += dA * w[i]
		}
	}
	for f, b := range buckets {
		row := grad.Rows.Row(b)
		row[0] += dLogit
		for k, v := range m.dInput[f*e : (f+1)*e] {
			row[1+k] += v
		}
	}
	return loss, prob
}

// AccumulateBatch adds the summed gradient of batch's log loss to grad,
// records each prediction in meter, and returns the summed loss.
func (m *Model) AccumulateBatch(p Params, batch []Row, grad Params, meter *Meter) float64 {
	var sum float64
	for i := range batch {
		loss, prob := m.Accumulate(p, &batch[i], grad)
		meter.Add(loss, prob, batch[i].Clicked)
		sum += loss
	}
	return sum
}

// Evaluate is the mean loss and AUC of p on rows.
func (m *Model) Evaluate(p Params, rows []Row) (loss, auc float64) {
	var meter Meter
	for i := range rows {
		prob := m.Predict(p, &rows[i])
		meter.Add(logLoss(prob, rows[i].Clicked), prob, rows[i].Clicked)
	}
	return meter.Loss(), meter.AUC()
}

func logLoss(prob float64, clicked bool) float64 {
	const floor = 1e-15
	if clicked {
		return -math.Log(math.Max(prob, floor))
	}
	return -math.Log(math.Max(1-prob, floor))
}
