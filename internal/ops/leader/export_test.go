package leader

import (
	"encoding/hex"
	"net/http"
)

// Prove answers a probe or a forwarded request r as a holder with owner
// string holder that knows secret would: it sets the proof header on w.
func Prove(w http.ResponseWriter, r *http.Request, secret []byte, holder string) {
	s, ok := parseSigned(r.Header.Get(forwardedHeader))
	if ok {
		w.Header().Set(proofHeader, hex.EncodeToString(proofMAC(secret, s.nonce, holder)))
	}
}

// ProbePath is where a forwarding replica probes a holder.
const ProbePath = probePath
