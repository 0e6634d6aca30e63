// Package bounded keeps what comes from the API within limits: every value
// that becomes a label or a line of the status page is bounded in length
// (Label) and in distinct values per label (Fold), and an operation's id in
// length and alphabet (CheckID).
package bounded
