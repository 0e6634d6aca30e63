package tracker

import (
	"fmt"

	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
)

// Ids are checked (bounded.CheckID: 1 to 128 bytes of printable ASCII)
// where they enter, for every kind of operation alike: from a client
// (track, resolve: BadIDError, answered 400) and from the API (a create's
// or a trigger's answer: unkeepableID, an outcome the operator settles).
// Past that check an id is stored, logged, answered and sent as it is.

// BadIDError: a client gave an id that no operation can have; nothing was
// sent or stored.
type BadIDError struct{ Err error }

func (e *BadIDError) Error() string { return e.Err.Error() }
func (e *BadIDError) Unwrap() error { return e.Err }

// UnkeepableIDError: the API started an operation but answered an id that
// cannot be kept (bounded.CheckID refuses it): the operation cannot be
// followed, so its request is of unknown outcome (its intent stays, listed
// for an operator).
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
