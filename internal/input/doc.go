// Package input parses and checks flag and configuration values, with errors
// that name the flag or the key.
//
// Flag values name their flag when they do not parse (Int, Duration, Bytes,
// Enum); a renamed flag keeps working with a notice (Renames); each package
// checks its own Config in one place (Field, InRange, First), and a command
// reports the problem under its own flag name (Rename).
package input
