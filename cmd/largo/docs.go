package main

// The command reference (docs/reference/), the man pages (man/man1/) and
// the shell completions (dist/completions/) are written from the commands
// by the test that checks them (TestDocsUpToDate in docs_test.go), so that
// their generator and what it pulls in (markdown and man page renderers,
// YAML) stay out of the binary: their package initialisers alone cost a
// server about 0.6 MiB of resident memory at idle.

//go:generate go test -run ^TestDocsUpToDate$ . -update
