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
//	    [components=(full swa mamba)]      fresh target; prints its render
//	insert tokens=(..) [slots=(..)] [ns=salt:s,extra:e,lora:l] [prev=N]
//	    [prio=N] [chunked] [track] [session=S] [as=name]
//	begin-insert <insert args> | resume-insert | end-insert
//	match tokens=(..) [ns=..] [as=name]   binds name to LastDevice
//	lock node=X [skip=(swa)] [as=r]        prints the receipt
//	unlock node=X receipt=r [skip-swa] [forge=Y]
//	    forge=Y presents the receipt as if it had been taken on Y
//	evict n=N [comp=full] | evict-start n=N [comp=full] | evict-next | evict-end
//	render | sanity | nodes | leaves | receipts | reset
//	inspect node=X | dfs-order nodes=(X Y ..)
//	events                                 drains and prints KV events
//	hashes node=X                          storage page hashes (hex)
//
// When insert omits slots, it gets one per aligned atom from a counter
// that starts at 100 on each new (and is echoed). Every error prints as
// "error: <message>". After each command the target's sanity check must
// pass.
package transcripttest
