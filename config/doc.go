// Package config finds, reads and validates switchboard's configuration: a TOML
// file (switchboard.toml) plus a few environment variables.
//
// [Locate] decides where the data directory and the config file are; [Load]
// reads the file and returns a fully resolved [Config]: `${VAR}` references
// expanded inside string values, defaults applied, relative paths resolved
// against the config file's directory, and everything validated. Every problem
// in the file is reported as an [*Error] naming the file, the line and the key,
// e.g.
//
//	switchboard.toml:12: agents.main.permission_mode: "yolo" is not one of standard, acceptEdits, unrestricted, strict
//
// so the user can go straight to it. Unknown keys are errors too, because a
// misspelt key silently ignored is a setting the user believes is on.
//
// Zero config works: without a file (or without a [providers] table) the
// provider "default" comes from OPENAI_BASE_URL, OPENAI_API_KEY and
// SWITCHBOARD_MODEL, and without an [agents] table the agent "main" works in
// the base directory.
//
// The package is a leaf: it imports only the standard library and go-toml, and
// it knows nothing of the packages that consume it. Only cmd reads a [Config]
// and maps it to each package's own options.
//
// Concurrency: Locate, Load and Parse keep no state between calls and may be
// called from several goroutines at once. A returned *Config is a plain value;
// it is safe for concurrent reads once returned, and nothing in this package
// mutates it afterwards.
package config
