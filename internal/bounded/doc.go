// Package bounded keeps what comes from outside within limits: API values
// that become labels, and writes to disk.
//
// Every value from the API that becomes a label or a line of the status page
// is bounded in length (Label) and in distinct values per label (Fold); a
// write to disk is bounded in how long its caller waits for it (Writes),
// against a frozen filesystem.
package bounded
