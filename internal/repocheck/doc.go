// Package repocheck holds the repository's own checks, run by go test ./...
// like any other test: every relative link in README.md and docs/ resolves
// (to a file, and to a heading where it names one); no comment, flag help or
// doc cites a document that is not in the repository; and the package map in
// docs/architecture.md names every package under server/.
package repocheck
