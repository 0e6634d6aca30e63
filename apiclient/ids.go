package apiclient

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxIDLength bounds an id the client sends or hands back (project,
// automation, job and export ids). The API's own ids are a few dozen
// bytes; a longer one is a mistake or an attack, and one that reached a
// path, a store key or a log line whole could make each of them as large
// (issue 36: a 1 MB status id reached bbolt and the logs).
const MaxIDLength = 256

// CheckID reports whether id can be sent as, or kept as, an id of the API:
// not empty, at most MaxIDLength bytes of valid UTF-8, every rune
// printable (no NUL, newline or other control character, which would
// forge log lines or split a path), and not a dot segment. what names the
// id in the error, which never quotes an id that failed.
func CheckID(what, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("empty %s", what)
	case len(id) > MaxIDLength:
		return fmt.Errorf("%s of %d bytes: at most %d", what, len(id), MaxIDLength)
	case !utf8.ValidString(id):
		return fmt.Errorf("%s is not valid UTF-8", what)
	case id == "." || id == "..":
		return fmt.Errorf("invalid %s %q", what, id)
	}
	for i, r := range id {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%s has an unprintable character (%U) at byte %d", what, r, i)
		}
	}
	return nil
}

// idSegment checks id (CheckID) and escapes it as one path segment.
func idSegment(what, id string) (string, error) {
	if err := CheckID(what, id); err != nil {
		return "", err
	}
	return segment(what, id)
}

// answeredID is an id read from an answer: kept when CheckID accepts it,
// "" otherwise, so that an oversized or unprintable id never reaches a
// store, a path or a log line.
func answeredID(id string) string {
	if CheckID("id", id) != nil {
		return ""
	}
	return id
}
