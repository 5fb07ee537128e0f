// Package workload provides request workloads for replaying through a prefix
// cache: a reader for Mooncake-format JSONL traces and a deterministic
// built-in generator of a mixed serving workload.
//
// Both sources produce [Request] values. A request carries its arrival time,
// its input and output lengths, its expanded input tokens and, optionally, the
// tenant it belongs to. Package workload uses the standard library only.
//
// # Mooncake traces
//
// A Mooncake trace is a JSON Lines file; each non-blank line is one request:
//
//	{"timestamp": 0, "input_length": 600, "output_length": 12, "hash_ids": [7, 8]}
//
// timestamp is the arrival time in milliseconds, and hash_ids names the
// request's input in 512-token blocks: two requests whose first k hash_ids are
// equal share their first k blocks. [ReadMooncake] and [MooncakeReader] turn
// each line into a [Request] whose Tokens are made by [ExpandTokens]: block h
// at offset j becomes the token uint32(h*512 + j). Every block has 512 tokens
// except the last, which has input_length - 512*(len(hash_ids)-1) tokens, a
// number that must lie in 1..512.
//
// A line that is not a JSON object, lacks one of the four fields, holds a
// negative number, lists no hash_ids for a non-empty input, has a last block
// of a length outside 1..512, or names a block whose tokens overflow uint32 is
// rejected with a [*TraceError] that names the file and the 1-based line, for
// example
//
//	workload: trace.jsonl:17: input_length 600 does not fit 1 hash_ids of 512 tokens
//
// Every such error matches [ErrMalformedTrace] with [errors.Is]. Blank lines
// are skipped; lines may be arbitrarily long.
//
// [MooncakeReader.Stream] reads a trace ahead of its consumer on a goroutine
// of its own, a bounded queue of requests ahead, so that a replay can start on
// the first request as soon as its line is read instead of after the whole
// trace is expanded. It returns the same requests, lines and errors as the
// reader, in the same order: a bad line's error comes after every request
// before it. [GenerateStream] runs the built-in generator the same way.
//
// # The built-in generator
//
// [Generate] builds a workload from a [GenConfig] (start from
// [DefaultGenConfig]). It is deterministic: the same configuration gives the
// same requests on every machine (with a given Go release), because it draws
// from a PCG source seeded by GenConfig.Seed and uses integer arithmetic only. Sessions of four kinds
// arrive over time and their requests interleave:
//
//   - Chat: a conversation that starts from one of a few shared system
//     prompts (600 to 2000 tokens). Each turn's prompt is the previous
//     prompt, plus the previous answer, plus a new user message, so every turn
//     extends the one before. 1 to 10 turns, 5 to 60 seconds apart.
//   - Agent: a tool-using agent that starts from one of a few long shared tool
//     prompts (3000 to 8000 tokens) and a task. Each step appends the model's
//     previous tool call and the tool's result (100 to 2000 tokens). 2 to 12
//     steps, 0.5 to 5 seconds apart.
//   - Few-shot: a batch of 8 to 32 questions sent almost at once, all behind
//     the same prefix of worked examples (1000 to 3000 tokens) drawn from a
//     small set of templates.
//   - Document QA: 3 to 16 questions, 3 to 30 seconds apart, over one long
//     document (2000 to 12000 tokens) drawn from a shared library, so that
//     several sessions may ask about the same document.
//
// With the default configuration, roughly 20% of the requests are chat turns,
// 20% agent steps, 30% few-shot questions and 30% document questions (the
// shares shift with GenConfig.Requests, as sessions still running when the
// workload ends are cut short), and the average input is about 5000 tokens:
// about 2000 for chat turns and few-shot questions, 7500 for agent steps and
// document questions. Token ids lie in
// [0, GenConfig.VocabSize) (128256 by default) and are skewed towards small
// ids, as real token frequencies are; user and assistant turns start with
// fixed template tokens, as chat templates do. When GenConfig.Tenants is
// above 1, each session belongs to a tenant named "tenant-N" and all its
// requests carry that Namespace.
//
// Generated requests also carry HashIDs in the Mooncake sense: two requests
// have equal HashIDs[i] exactly when their first i+1 blocks of 512 tokens are
// equal (up to a 64-bit hash collision), whatever their Namespace. Their
// Tokens are not the expansion of their HashIDs.
//
// Requests of one session may share backing arrays for Tokens; treat Tokens
// as read-only.
package workload
