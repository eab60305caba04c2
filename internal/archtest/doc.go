// Package archtest holds the test that pins DESIGN §3's import rules. It
// has no code of its own.
package archtest
