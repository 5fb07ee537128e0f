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
//	    [hash=sglang|vllm] [wt-threshold=N] [linker]
//	    [components=(full swa mamba)] [window=W] [mamba-chunk=C]
//	    [mamba-cap=K]                      fresh target; prints its render
//	insert tokens=(..) [slots=(..)] [ns=salt:s,extra:e,lora:l] [prev=N]
//	    [prio=N] [chunked] [track] [session=S] [as=name]
//	    [swa-evicted=E] [swa-branching=B] [mamba=SLOT]
//	begin-insert <insert args> | resume-insert | end-insert
//	match tokens=(..) [ns=..] [as=name] [best=name]
//	                                       binds as= to LastDevice, best=
//	                                       to Best
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
//	mark-pending nodes=(X ..) ack=N        prints the nodes, ancestors first
//	finish-wt nodes=(X ..) ack=N           the write-through's ack
//	write-through nodes=(X ..)             a BackupKV chain as a controller
//	                                       runs it: per node backup, lock,
//	                                       mark pending (acks from a counter,
//	                                       1 on each new), ack, unlock
//	plan-load-back node=X                  prints the plan and keeps it
//	commit-load-back node=X                commits the kept plan (or a fresh
//	                                       one) with device slots: Full from
//	                                       the insert counter, SWA and Mamba
//	                                       from another (500 on each new)
//	finish-load-back node=X
//	load-back node=X                       host-lock and lock X, plan,
//	                                       commit, finish, unlock both
//	host-lock node=X [as=h]                prints the host receipt
//	host-unlock node=X receipt=h [forge=Y]
//	evict-host n=N [comp=..]               prints what it freed
//	insert-host node=X tokens=(..) [slots=(..)] [ns=..] [as=name]
//	                                       host slots default to the host
//	                                       counter; prints the node, the
//	                                       prefix and the slots the host
//	                                       frees itself
//	drop-subtree node=X                    DropSubtreeNoHost
//	storage-spec node=X                    storage keys (16 hex digits each)
//	backfill                               BackfillHashes
//	linker-chain node=X | linker-pending nodes=(..) id=N
//	    | linker-finish nodes=(..) id=N [ok=false]
//	    | linker-stored node=X [until=Y]   the external linker's marks
//	sanity-ongoing [wt=(..)] [lb=(..)]     SanityCheckOngoing with the
//	                                       host's operations in flight
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
// wt-threshold= sets Config.WriteThroughThreshold and linker
// Config.ExternalLinker. The host-tier commands (backup through
// sanity-ongoing) each need an optional interface of the target
// (HostBackuper, Demoter, WriteThroughMarker, LoadBacker, HostLocker,
// HostEvictor, HostInserter, SubtreeDropper, StorageSpecer, Linker,
// OngoingChecker), which a core.Tree has with exactly their signatures.
// In a tree with the host tier or the linker, inspect adds a line with
// h-leaf=, wt-pending=, pinned-by=, ext-stored= and ext-pending=.
//
// When insert omits slots, it gets one per aligned atom from a counter
// that starts at 100 on each new (and is echoed). Every error prints as
// "error: <message>". After each command the target's sanity check must
// pass.
package transcripttest
