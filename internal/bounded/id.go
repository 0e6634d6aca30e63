package bounded

import (
	"fmt"
	"strconv"
)

// MaxIDBytes is the longest id of an operation (agent job id, deployment
// status id, intent id) the gateway and the tracker accept, from a client
// or from the API. Real ids are 20 to 40 characters; 128 leaves room for a
// longer scheme and keeps every key of the state, every log line and every
// answer small (a 1 MB id once became a 1 MB bbolt key, a 1 MB answer and
// 1,000,000-character log lines).
const MaxIDBytes = 128

// CheckID returns an error when id is not 1 to MaxIDBytes bytes of
// printable ASCII without space (what every id of the API is): such an id
// is refused before it is stored, logged, answered or sent. The error
// quotes at most a short, escaped excerpt of id, never the whole.
func CheckID(what, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%s is empty", what)
	case len(id) > MaxIDBytes:
		return fmt.Errorf("%s is %d bytes long: at most %d", what, len(id), MaxIDBytes)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("%s %s has a byte that is not printable ASCII (0x%02x at %d): ids are printable ASCII without spaces", what, Excerpt(id), c, i)
		}
	}
	return nil
}

// excerptBytes is how much of a refused value Excerpt shows.
const excerptBytes = 40

// Excerpt is a short quoted excerpt of s for an error or a log line: at
// most excerptBytes bytes of it, Go-escaped (so NUL, newlines and invalid
// UTF-8 show as escapes), followed by its full length when cut.
func Excerpt(s string) string {
	if len(s) <= excerptBytes {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:excerptBytes]) + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// Text bounds a free string from the API that is stored or served (a
// status, a URL, a model name): the rule of labels (Label), so that a 1 MB
// status is kept, written and answered as a few hundred bytes.
func Text(s string) string { return Label(s) }
