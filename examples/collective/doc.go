// Package collective trains the ctr model data-parallel: every worker holds
// the whole parameter vector, computes the gradient of its own batch, and the
// workers sum their gradients with a ring all-reduce before each identical
// Adagrad step. Rank 0 evaluates on the test rows and writes checkpoints.
//
// Workers form a ring over TCP: each listens on its own endpoint, connects to
// the next rank and accepts the previous one. A single worker needs no
// network at all.
//
// Train runs a fixed ring. TrainElastic follows a membership the operator
// keeps current in a directory: it trains in epochs, each settled by a
// rendezvous of the current members and started from the last complete
// checkpoint, so that workers may die and come back, join or leave.
package collective
