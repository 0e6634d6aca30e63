// Package secrets reads the API key and passwords from files and keeps them
// out of everything the exporter writes.
//
// Flags show in ps, files do not. Every read of a file the user names is
// bounded (ReadAtMost), so that a wrong path is refused instead of read until
// memory runs out; a Redactor masks a key out of error texts, log lines and
// label values, also when an upstream echoes it altered.
package secrets
