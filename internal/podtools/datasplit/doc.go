// Package datasplit is `paddlejob data split`: it splits line-based training
// data into one share per trainer in the three-node tutorial's layout,
// <out>/<job>/<trainer id>/data/<file>, streaming inputs of any size with
// bounded memory.
package datasplit
