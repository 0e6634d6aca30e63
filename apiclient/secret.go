package apiclient

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
)

// redacted is what a Secret prints as, whatever the verb or encoder.
const redacted = "[redacted]"

// Secret is a value the API hands out that grants access on its own (a
// static export bundle's presigned URL: whoever holds it downloads the
// documentation until it expires). Printing it with any fmt verb, logging
// it (go-kit, slog) or marshalling it (JSON, text) gives "[redacted]", so
// a struct that holds one can be logged or stored whole without leaking
// it; Reveal is the one way to the value, to be called where it is handed
// to whoever asked for it. The value sits behind a pointer, so even
// reflection that reaches it (fmt on an unexported field) prints an
// address. Secrets compare equal only as the same value read once.
type Secret struct{ v *string }

// NewSecret wraps s.
func NewSecret(s string) Secret { return Secret{&s} }

// Reveal returns the secret value ("" for the zero Secret).
func (s Secret) Reveal() string {
	if s.v == nil {
		return ""
	}
	return *s.v
}

// IsZero reports whether s holds nothing.
func (s Secret) IsZero() bool { return s.Reveal() == "" }

// String implements fmt.Stringer.
func (s Secret) String() string { return redacted }

// GoString implements fmt.GoStringer (%#v).
func (s Secret) GoString() string { return redacted }

// Format implements fmt.Formatter: every verb (%x and %q included).
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(redacted)) }

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalText implements encoding.TextMarshaler (go-kit's logfmt).
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// MarshalJSON implements json.Marshaler: a Secret is never written out,
// so a record stored or served as JSON does not carry it.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(redacted) }

// UnmarshalJSON reads a JSON string (null: the zero Secret). An error
// never quotes the value.
func (s *Secret) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = Secret{}
		return nil
	}
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("secret: want a JSON string, got %d bytes of another kind", len(b))
	}
	*s = NewSecret(v)
	return nil
}

// withholdSecrets strips an error answer of an endpoint whose answers hold
// a credential: its body is not quoted (a redirect's body names its
// target; a proxy's may echo anything), and the API's {error} text is
// kept unless it holds a URL.
func withholdSecrets(e *APIError) {
	if e.Body != "" {
		e.Body = fmt.Sprintf("(%d bytes, not quoted: the endpoint's answers hold a secret URL)", len(e.Body))
	}
	if strings.Contains(e.Message, "://") {
		e.Message = "(not quoted: it holds a URL)"
	}
}
