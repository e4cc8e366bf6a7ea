// Package ctr is the shared kit of the CTR training examples: a deterministic
// synthetic click-through data set drawn from a hidden true model, a small
// wide & deep logistic model with Adagrad, AUC, and pass-NNNNN checkpoints.
//
// The parameter-server (package ps) and collective (package collective)
// examples train the same model on the same data; they differ only in how
// gradients are combined across workers.
package ctr
