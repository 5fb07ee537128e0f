// Package transcript runs data-driven tests: script files of commands, each
// followed by the output it must produce, in the style of etcd's raft
// transcript tests. It uses the standard library only.
//
// # Script format
//
// A script is a sequence of commands. Each command is
//
//	name key=value key=(a b c) flag ...
//	optional input lines
//	----
//	expected output
//	(a blank line, or the end of the file)
//
// The first line names the command and its arguments, separated by spaces.
// An argument is a bare word (a flag with no values), key=value, or
// key=(v1 v2 ...) whose parenthesised list may hold spaces. Lines after the
// command line and before the "----" separator are the command's input.
// The expected output runs from the separator to the next blank line.
//
// Output that itself contains a blank line is framed by doubled separators,
// the convention of cockroachdb's datadriven package:
//
//	name args
//	----
//	----
//	first paragraph
//
//	second paragraph
//	----
//	----
//
// Between commands, blank lines and lines starting with '#' are comments.
//
// # Running and rewriting
//
// [Run] parses a file, calls a handler for each command and compares what
// it returns with the expected output, reporting file:line and a line diff
// on a mismatch. With the -rewrite flag (defined by this package, so pass
// it to the test binary: go test ./core -run TestTranscripts -rewrite) the
// file is instead rewritten in place with the actual output, keeping
// commands and comments as they are. A command written without a separator
// fails normally and gets one, with its output, under -rewrite; so new
// cases can be written as bare commands and filled in.
//
// Handlers read arguments through [Cmd]'s helpers, which fail the test with
// the command's position on a missing or malformed argument; an argument
// the handler never read also fails the test, so typos do not pass
// silently. Output is compared with a trailing newline added when missing.
package transcript
