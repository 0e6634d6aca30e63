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
// their JSON body.

// contentTypeMsg is the answer to a POST that is not JSON.
const contentTypeMsg = "Content-Type must be application/json"

// JSONContentType reports whether r declares a JSON body. Every POST of the
// gateway requires it, bodies it ignores included: a browser sends a
// cross-site form (urlencoded, multipart, text/plain) without asking, but
// never application/json, so a page cannot make a browser that has the
// basic-auth credentials cached act on the gateway.
func JSONContentType(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// NeedJSON answers 415 and reports false when r is not declared JSON.
func NeedJSON(w http.ResponseWriter, r *http.Request) bool {
	if !JSONContentType(r) {
		WriteError(w, http.StatusUnsupportedMediaType, contentTypeMsg)
		return false
	}
	return true
}

// BadRequest is a refused request: its status, reason and message.
type BadRequest = Answer

// Refuse is the answer to a request refused before anything was done: 415
// when it is not JSON, 400 for a bad Idempotency-Key; nil when neither.
// key is its Idempotency-Key ("" without one).
func Refuse(r *http.Request) (key string, bad *BadRequest) {
	if !JSONContentType(r) {
		return "", &BadRequest{Status: http.StatusUnsupportedMediaType, Reason: ReasonUnsupportedMediaType, Msg: contentTypeMsg}
	}
	key, err := IdempotencyKey(r.Header)
	if err != nil {
		return "", &BadRequest{Status: http.StatusBadRequest, Reason: ReasonBadRequest, Msg: err.Error()}
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
// (an empty body too when emptyOK), at most limit bytes; want names what
// the object holds in the errors (`{"prompt": "..."}`; "" a JSON object).
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
	switch {
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
