package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
)

// Reading the requests of every kind's routes: their Idempotency-Key,
// their JSON body. No route demands a Content-Type: a browser's
// cross-site request is refused before any route (net/http's
// CrossOriginProtection, internal/server), and a route the API's
// reference declares no body for (an update, an automation trigger)
// takes a POST without one, so that a client of the API works unchanged.

// BadRequest is a refused request: its status, reason and message.
type BadRequest = Answer

// Refuse is the answer to a request refused before anything was done: 400
// for a bad Idempotency-Key; nil when none. key is its Idempotency-Key
// ("" without one).
func Refuse(r *http.Request) (key string, bad *BadRequest) {
	key, err := IdempotencyKey(r.Header)
	if err != nil {
		return "", badBody(err.Error())
	}
	return key, nil
}

// StartHeaders checks the headers of a request of any kind that starts an
// operation (Refuse), answering a refusal itself (ok false).
func StartHeaders(w http.ResponseWriter, r *http.Request) (key string, ok bool) {
	key, bad := Refuse(r)
	if bad != nil {
		bad.Write(w)
		return "", false
	}
	return key, true
}

// IdempotencyKey reads the Idempotency-Key header: a Structured Fields
// string as the IETF draft defines it ("..."), or for the clients that send
// it so, a bare token. The key is 1 to 255 printable ASCII characters; no
// header is an empty key.
func IdempotencyKey(h http.Header) (string, error) {
	vals := h.Values("Idempotency-Key")
	if len(vals) == 0 {
		return "", nil
	}
	if len(vals) > 1 {
		return "", errors.New("Idempotency-Key: give the header once")
	}
	v := strings.TrimSpace(vals[0])
	if strings.HasPrefix(v, `"`) {
		var b strings.Builder
		closed := false
		for i := 1; i < len(v); i++ {
			c := v[i]
			if c == '\\' && i+1 < len(v) && (v[i+1] == '"' || v[i+1] == '\\') {
				b.WriteByte(v[i+1])
				i++
				continue
			}
			if c == '"' {
				closed = i == len(v)-1
				break
			}
			b.WriteByte(c)
		}
		if !closed {
			return "", errors.New("Idempotency-Key: malformed quoted string")
		}
		v = b.String()
	}
	if !engine.ValidIdempotencyKey(v) {
		return "", fmt.Errorf("Idempotency-Key: must be 1 to %d printable ASCII characters", engine.MaxIdempotencyKeyLen)
	}
	return v, nil
}

func badBody(msg string) *BadRequest {
	return &BadRequest{Status: http.StatusBadRequest, Reason: ReasonBadRequest, Msg: msg}
}

// ReadBody reads the body of a route of any kind into v: a JSON object
// (an empty body too when emptyOK), at most limit bytes, declared
// application/json or not declared (415 for a body declared another
// type); want names what the object holds in the errors
// (`{"prompt": "..."}`; "" a JSON object).
func ReadBody(w http.ResponseWriter, r *http.Request, v any, emptyOK bool, limit int64, want string) *BadRequest {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return &BadRequest{Status: http.StatusRequestEntityTooLarge, Reason: ReasonTooLarge, Msg: fmt.Sprintf("request too large: the body may be at most %d bytes", limit)}
		}
		return badBody("reading the request body failed")
	}
	want = OrDefault(want, "a JSON object")
	text := strings.TrimSpace(string(data))
	ct := r.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	switch {
	case text != "" && ct != "" && mt != "application/json":
		// Read as JSON when undeclared; declared as something else, it
		// is not what the route takes.
		return &BadRequest{Status: http.StatusUnsupportedMediaType, Reason: ReasonUnsupportedMediaType,
			Msg: "the body must be JSON: send it as Content-Type: application/json (or without a Content-Type)"}
	case text == "" && emptyOK:
		return nil
	case text == "":
		return badBody("request body is empty: want " + want)
	case !strings.HasPrefix(text, "{") && json.Valid(data): // [1], "x", null: JSON, but not an object
		return badBody("expected a JSON object: want " + want)
	case !strings.HasPrefix(text, "{"):
		return badBody("malformed JSON: want " + want)
	}
	dec := json.NewDecoder(strings.NewReader(text))
	if err := dec.Decode(v); err != nil {
		if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && want != "a JSON object" {
			return nil // a field of another type: the route's own check says which
		}
		return badBody("malformed JSON: want " + want)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badBody("malformed JSON: unexpected data after the request object")
	}
	return nil
}
