package ps

import (
	"bufio"
	"encoding/gob"
	"net"

	"github.com/paddlejob/paddlejob/examples/ctr"
)

// request is one message from a trainer; exactly one field is set.
type request struct {
	Hello *hello
	Pull  *pull
	Push  *push
	Dump  *dump
	Done  *done
}

// reply answers a request; Err is set when it failed.
type reply struct {
	Err   string
	Hello *helloReply
	Pull  *pullReply
	Dump  *shardState
}

// hello joins a trainer to the job.
type hello struct {
	TrainerID int
	Trainers  int
	Rows      int // how many rows the trainer's shard of the data has
	Plan      ctr.Plan
	// Set by trainer 0 only: the shard's starting state and the pass it
	// starts at.
	Init      *shardState
	FirstPass int
}

type helloReply struct {
	FirstPass    int
	StepsPerPass int
}

// pull asks for the parameters of one step: the shard's dense slice and the
// rows of Buckets, all owned by the shard. Steps count from the first pass
// of the job, never from a resumed one.
type pull struct {
	Step    int
	Buckets []uint32
}

type pullReply struct {
	Dense []float64
	Rows  []float64 // the rows of the pull's buckets, in its order
}

// push is one trainer's gradient for one step: summed over Examples rows,
// for the shard's dense slice and the rows of Buckets.
type push struct {
	Step      int
	TrainerID int
	Examples  int
	LossSum   float64
	Dense     []float64
	Buckets   []uint32
	Rows      []float64
}

// dump asks for the shard's whole state once Step steps are applied.
type dump struct{ Step int }

// done says a trainer has finished.
type done struct{ TrainerID int }

// wire is one end of a connection: gob over buffered I/O.
type wire struct {
	conn net.Conn
	w    *bufio.Writer
	enc  *gob.Encoder
	dec  *gob.Decoder
}

func newWire(conn net.Conn) *wire {
	w := bufio.NewWriter(conn)
	return &wire{conn: conn, w: w, enc: gob.NewEncoder(w), dec: gob.NewDecoder(bufio.NewReader(conn))}
}

func (c *wire) send(msg any) error {
	if err := c.enc.Encode(msg); err != nil {
		return err
	}
	return c.w.Flush()
}

// receive decodes into a fresh value: gob leaves fields a message omits
// untouched.
func (c *wire) receive(msg any) error { return c.dec.Decode(msg) }
