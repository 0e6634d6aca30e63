package engine

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
)

// Ids are checked (bounded.CheckID: 1 to 128 bytes of printable ASCII)
// where they enter, for every kind of operation alike: from a client
// (track, resolve: BadIDError, answered 400) and from the API (a start's
// answer: unkeepableID, an outcome the operator settles). Past that check
// an id is stored, logged, answered and sent as it is.

// BadIDError: a client gave an id that no operation can have; nothing was
// sent or stored.
type BadIDError struct{ Err error }

func (e *BadIDError) Error() string { return e.Err.Error() }
func (e *BadIDError) Unwrap() error { return e.Err }

// UnkeepableIDError: the API started an operation but answered an id that
// cannot be kept (bounded.CheckID refuses it): the operation cannot be
// followed, so its request is of unknown outcome (its intent stays,
// listed for an operator).
type UnkeepableIDError struct{ Err error }

func (e *UnkeepableIDError) Error() string {
	return "the Mintlify API answered an id that cannot be kept: " + e.Err.Error()
}
func (e *UnkeepableIDError) Unwrap() error { return e.Err }

// unkeepableID is nil for an id the API may answer, an
// *UnkeepableIDError otherwise.
func unkeepableID(what, id string) error {
	if err := bounded.CheckID(what, id); err != nil {
		return &UnkeepableIDError{Err: fmt.Errorf("%w", err)}
	}
	return nil
}

// MaxIdempotencyKeyLen bounds an Idempotency-Key (the gateway checks it;
// the engine refuses longer ones too).
const MaxIdempotencyKeyLen = 255

// ValidIdempotencyKey reports whether key is acceptable: 1 to 255
// printable ASCII characters.
func ValidIdempotencyKey(key string) bool {
	if key == "" || len(key) > MaxIdempotencyKeyLen {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

// errBadIdempotencyKey refuses a request whose Idempotency-Key is not
// ValidIdempotencyKey: nothing is written or sent for it.
var errBadIdempotencyKey = errors.New("invalid idempotency key: 1 to 255 printable ASCII characters")

// checkIdempotencyKey is nil for no key ("") or a valid one.
func checkIdempotencyKey(key string) error {
	if key != "" && !ValidIdempotencyKey(key) {
		return errBadIdempotencyKey
	}
	return nil
}

// newIntentID is a new intent's id: the kind's prefix (Decl.IntentPrefix)
// and 24 random hex digits.
func newIntentID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// RequestHash is the hash of a request of any kind, for its
// Idempotency-Key: what makes two requests the same (a prompt; a kind and
// a branch; a domain, version and paths), joined by NULs.
func RequestHash(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:])
}
