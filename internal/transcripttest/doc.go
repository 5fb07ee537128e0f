// Package transcripttest is the command set of the radix tree's transcript
// tests (core/testdata/*.txt), run by package transcript. One harness
// serves every implementation of the tree: core's tests run the scripts
// against a *core.Tree, host/native's against each of its engines, and
// both compare with the same recorded output.
//
// [Run] replays a script against a [Target], built afresh by every new
// command. A Target has the operations of host/native's Engine, with
// core's types; the inspection commands need an [Inspector] as well,
// events an [EventTaker] (an engine) or a [TreeIntrospector], and hashes
// and the serial list of receipts a TreeIntrospector, which only a
// core.Tree is. A target whose node ids differ from the
// tree's own (an engine behind the wire protocol) is an [IDMapper]: ids
// are printed, and literal handles read, in core form, so one recording
// serves all. A target that is an io.Closer is closed when a new command
// replaces it and when the script ends.
//
// # Commands
//
// Node arguments take a name bound with as=, "root", or a literal handle
// such as n3.1:
//
//	new [page=N] [policy=P] [bigram] [host-tier] [write-back] [kv-events]
//	    [hash=sglang|vllm]
//	    [components=(full swa mamba)] [window=W] [mamba-chunk=C]
//	    [mamba-cap=K]                      fresh target; prints its render
//	insert tokens=(..) [slots=(..)] [ns=salt:s,extra:e,lora:l] [prev=N]
//	    [prio=N] [chunked] [track] [session=S] [as=name]
//	    [swa-evicted=E] [swa-branching=B] [mamba=SLOT]
//	begin-insert <insert args> | resume-insert | end-insert
//	match tokens=(..) [ns=..] [as=name]   binds name to LastDevice
//	lock node=X [skip=(swa mamba)] [as=r]  prints the receipt
//	unlock node=X receipt=r [skip-swa] [forge=Y]
//	    forge=Y presents the receipt as if it had been taken on Y
//	unlock-swa node=X receipt=r [forge=Y]  early SWA (and Mamba) release;
//	                                       prints its frees
//	evict n=N [comp=full|swa|mamba] | evict-start n=N [comp=..]
//	    | evict-next | evict-end
//	evict-excess node=X                    Mamba per-path cap from X up
//	lru comp=swa|mamba [host]              recency list, most recent first
//	backup node=X                          BackupSpec, then CommitBackup with
//	                                       host slots from a counter (1000
//	                                       on each new); prints the copies
//	demote node=X                          host-only from now; prints frees
//	render | sanity | nodes | leaves | receipts | reset
//	inspect node=X | dfs-order nodes=(X Y ..)
//	events                                 drains and prints KV events
//	hashes node=X                          storage page hashes (hex)
//
// window=, mamba-chunk= and mamba-cap= set Config.SWAWindow,
// MambaChunkSize and MambaMaxPathStates. swa-evicted= and swa-branching=
// set InsertParams.SWAEvictedSeqlen and SWABranchingSeqlen; mamba= is
// the request's Mamba state slot, which defaults to -1 (refused) in a
// tree with Mamba, so every such insert names it.
//
// Results print the auxiliary fields of the components the tree has:
// an insert adds mamba-exist= (Mamba) and swa-branch-inserted= (SWA) to
// its first line; a match adds a line with swa-branching= and
// swa-host-hit= (SWA) and mamba-branching=, mamba-host-hit= and
// mamba-slot= (Mamba). In a tree without the component a field prints
// only when it leaves its neutral value, so Full-only recordings do not
// change. inspect adds the SWA boundary stamp (uuid=) to the swa line.
//
// When insert omits slots, it gets one per aligned atom from a counter
// that starts at 100 on each new (and is echoed). Every error prints as
// "error: <message>". After each command the target's sanity check must
// pass.
package transcripttest
