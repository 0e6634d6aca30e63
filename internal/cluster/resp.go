package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// The Redis protocol (RESP2) for the few commands this package sends: a
// command is an array of bulk strings; a reply is a simple string, an
// error, an integer, a bulk string (or the null bulk), or an array of
// replies (or the null array). A client of our own instead of a library:
// go-redis reaches its ~600 commands through interfaces, so the linker
// keeps them all (8.6 MB of a 25 MB binary), for the dozen sent here.

// errNil is the null reply (a missing key or field, a script's false):
// not a failure, callers test it with errors.Is.
var errNil = errors.New("redis: nil")

// redisError is an error reply. Redis's error texts name the command and
// the problem (WRONGTYPE, NOSCRIPT, WRONGPASS), never an argument, so they
// hold no secret.
type redisError string

func (e redisError) Error() string { return string(e) }

// Bounds of what a reply may hold. A bulk string over maxBulk is refused
// from its header, before its bytes are read (the connection is dropped:
// they are still on the wire); a line (simple string, error, integer,
// header) over maxLine is refused too. Arrays are read element by element,
// so a header that promises more than arrives costs nothing.
const (
	maxLine  = 64 << 10
	maxArray = 1 << 24
	maxDepth = 8
)

// protocolError is a reply that is not RESP2, or over a bound: the
// connection is out of step and is dropped.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return "redis protocol: " + e.msg }

// respReader reads replies. Bulk strings come back as string (as Redis
// stores them: bytes), integers as int64, simple strings as string,
// arrays as []any; a null as errNil and an error reply as redisError,
// both as the error at the top level and as values inside an array.
type respReader struct {
	r       *bufio.Reader
	maxBulk int64
}

// read reads one reply. A protocol error or an I/O error leaves the
// reader out of step: the caller drops the connection.
func (rr *respReader) read() (any, error) {
	v, err := rr.value(0)
	if err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case redisError:
		return nil, v
	case nilReply:
		return nil, errNil
	}
	return v, nil
}

// nilReply is a null inside the reader; read turns it into errNil.
type nilReply struct{}

func (rr *respReader) value(depth int) (any, error) {
	line, err := rr.line()
	if errors.Is(err, io.EOF) && depth > 0 {
		err = io.ErrUnexpectedEOF // within a reply
	}
	if err != nil {
		return nil, err
	}
	if len(line) == 0 {
		return nil, &protocolError{"empty reply line"}
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return string(body), nil
	case '-':
		return redisError(body), nil
	case ':':
		n, err := strconv.ParseInt(string(body), 10, 64)
		if err != nil {
			return nil, &protocolError{fmt.Sprintf("integer reply %.20q", body)}
		}
		return n, nil
	case '$':
		return rr.bulk(body)
	case '*':
		return rr.array(body, depth)
	}
	return nil, &protocolError{fmt.Sprintf("unknown reply type %q", line[0])}
}

// bulk reads a bulk string whose header's length is n: at most maxBulk
// bytes, refused from its header when longer.
func (rr *respReader) bulk(n []byte) (any, error) {
	size, err := rr.length(n, rr.maxBulk)
	if err != nil || size < 0 {
		return nilReply{}, err
	}
	buf := make([]byte, size+2)
	if _, err := io.ReadFull(rr.r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // after its header
		}
		return nil, fmt.Errorf("reading a bulk reply of %d bytes: %w", size, err)
	}
	if buf[size] != '\r' || buf[size+1] != '\n' {
		return nil, &protocolError{"bulk reply not ended by CRLF"}
	}
	return string(buf[:size]), nil
}

// array reads an array of the header's length n at nesting depth, its
// nulls as errNil.
func (rr *respReader) array(n []byte, depth int) (any, error) {
	if depth >= maxDepth {
		return nil, &protocolError{fmt.Sprintf("arrays nested deeper than %d", maxDepth)}
	}
	size, err := rr.length(n, maxArray)
	if err != nil || size < 0 {
		return nilReply{}, err
	}
	out := make([]any, 0, min(size, 1024))
	for range size {
		v, err := rr.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if _, null := v.(nilReply); null {
			v = errNil
		}
		out = append(out, v)
	}
	return out, nil
}

// length reads the length of a bulk string or an array: -1 is the null,
// one over limit is refused.
func (rr *respReader) length(b []byte, limit int64) (int64, error) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	switch {
	case err != nil || n < -1:
		return 0, &protocolError{fmt.Sprintf("length %.20q", b)}
	case n > limit:
		return 0, &protocolError{fmt.Sprintf("a reply of %d, more than the %d this client reads", n, limit)}
	}
	return n, nil
}

// line reads up to CRLF, without it; a line over maxLine is refused.
func (rr *respReader) line() ([]byte, error) {
	var line []byte
	for {
		chunk, err := rr.r.ReadSlice('\n')
		if len(line)+len(chunk) > maxLine+2 {
			return nil, &protocolError{fmt.Sprintf("a reply line over %d bytes", maxLine)}
		}
		line = append(line, chunk...)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if len(line) > 0 && errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, &protocolError{"reply line not ended by CRLF"}
	}
	return line[:len(line)-2], nil
}

// writeCommand appends one command, an array of bulk strings, to w.
// Arguments are strings, byte slices or integers: nothing else is sent.
func writeCommand(w *bufio.Writer, args []any) error {
	var num [20]byte
	w.WriteByte('*')
	w.Write(strconv.AppendInt(num[:0], int64(len(args)), 10))
	w.WriteString("\r\n")
	for i, a := range args {
		var s string
		var b []byte
		switch a := a.(type) {
		case string:
			s = a
		case []byte:
			b = a
		case int:
			b = strconv.AppendInt(num[:0], int64(a), 10)
		case int64:
			b = strconv.AppendInt(num[:0], a, 10)
		default:
			// A programming error, named without the value.
			return fmt.Errorf("redis command argument %d: unsupported type %T", i, a)
		}
		w.WriteByte('$')
		w.Write(strconv.AppendInt(make([]byte, 0, 20), int64(len(s)+len(b)), 10))
		w.WriteString("\r\n")
		w.WriteString(s)
		w.Write(b)
		if _, err := w.WriteString("\r\n"); err != nil {
			return err
		}
	}
	return nil
}
