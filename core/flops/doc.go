// Package flops counts what a hybrid (attention + SSM) model's prefill
// costs and what its saved recurrent states weigh, with the formulas of
// the Marconi paper (Pan et al., MLSys 2025; ../shared/SNAPSHOTS.md §10).
// The unified tree's marconi Mamba policy (package core) and the snapshot
// index's Marconi order (core/snapshot) both rank states by these counts.
//
// It is standard-library only and deterministic, like core.
package flops
