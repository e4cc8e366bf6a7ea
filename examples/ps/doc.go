// Package ps trains the ctr model with parameter servers, synchronously.
//
// Each pserver holds one shard of the parameters and their Adagrad
// accumulators: the sparse rows whose bucket modulo the number of pservers is
// its index, and one contiguous slice of the dense part. Trainers connect to
// every pserver and, for each step,
//
//  1. pull the dense part and the rows of the buckets their batch uses,
//  2. compute the summed gradient of their batch,
//  3. push it, with the number of rows it covers.
//
// A pserver applies step s once every trainer has pushed s (a barrier), using
// the mean gradient over every trainer's rows, and only then answers pulls
// for step s+1. All trainers run the same number of steps per pass: a trainer
// whose shard is shorter pushes empty gradients.
//
// Trainer 0 starts the job: its hello carries the shard's initial state,
// fresh or from the checkpoint it resumes. After every pass it fetches every
// shard, evaluates on the test rows and writes the checkpoint. A pserver exits
// once every trainer has said it is done, and fails if a trainer disconnects
// before that or not all trainers join in time.
//
// The wire format is gob: one request, then one reply, per round trip.
package ps
