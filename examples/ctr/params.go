package ctr

// Params is a view of the parameters, or of gradients in the same shape: the
// dense part and a way to find a bucket's row of the sparse table. A trainer
// that holds the whole vector uses a Table; one that pulled just a batch's
// rows uses a RowMap.
type Params struct {
	Dense []float64
	Rows  RowLookup
}

// RowLookup finds the row of the sparse table for a bucket. The returned
// slice aliases the storage, so writes to it stick.
type RowLookup interface {
	Row(bucket uint32) []float64
}

// Table is the whole sparse table, bucket after bucket.
type Table struct {
	Width int
	Data  []float64
}

func (t Table) Row(bucket uint32) []float64 {
	start := int(bucket) * t.Width
	return t.Data[start : start+t.Width]
}

// RowMap holds some rows of the sparse table, by bucket.
type RowMap map[uint32][]float64

func (m RowMap) Row(bucket uint32) []float64 { return m[bucket] }

// View is the Params view of a flat vector of c.Size() values.
func (c Config) View(flat []float64) Params {
	d := c.DenseSize()
	return Params{Dense: flat[:d], Rows: Table{Width: c.RowWidth(), Data: flat[d:]}}
}
