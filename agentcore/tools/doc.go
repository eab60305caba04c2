// Package tools is the agent's tool set: Read, Write, Edit, Bash, Grep,
// Glob, TodoWrite, Recall and Attach (DESIGN §5, issue 3).
//
// Each constructor returns an agentcore.Tool whose spec (name, short
// model-facing description embedded from a .md file beside it, and JSON
// schema) is fixed at construction, so the tool schemas of every request are
// byte-identical. Names and argument names are a contract: they follow the
// conventions models are trained on.
//
// Tools never check permissions (the loop classifies every call before Run)
// and never panic: bad arguments, missing files and failed commands all come
// back as results with IsError set and a message the model can act on.
// Relative paths resolve against ToolEnv.Workspace. Every result's text is
// passed through ToolEnv.Redactor when one is set.
//
// Concurrency: the tools hold no mutable state; one value may run any number
// of calls at once from several goroutines. Calls that touch the same file
// must be serialized by the caller, which is what Resource is for: reads are
// ResourceRead, Write and Edit are ResourceWrite on the cleaned absolute
// path, Bash is ResourceExclusive. Write and Edit replace files atomically
// (temporary file and rename), so a concurrent reader sees the old or the
// new content, never a mix. Bash and Grep stop when ctx is cancelled.
package tools
