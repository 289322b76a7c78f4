// Package archtest holds the architecture test (arch_test.go): the
// import rules, the stage kinds' rules, the CLI's atomic writes and the
// size limits of docs/DESIGN.md's layout, checked on the module's source
// in one place. It has no code of its own.
package archtest
