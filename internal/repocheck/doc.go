// Package repocheck holds the checks of the repository's own shape, run
// by `go test` like any other test: the imports between the top-level
// folders run down only (cmd → serve → images → boot → apply → netup →
// seed → internal), and the README and docs/ stay a front door with
// every page linked and docs/layout.md naming every package. It has no
// code of its own.
package repocheck
