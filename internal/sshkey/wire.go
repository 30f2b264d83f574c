package sshkey

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
)

// maxMPIntBytes is OpenSSH's bound on an mpint (16384-bit numbers plus a
// sign byte): hostile input cannot make us do arithmetic on megabyte
// numbers.
const maxMPIntBytes = 16384/8 + 1

var errTruncated = errors.New("data ends early")

// wireReader reads RFC 4251 §5 values. The first failure sticks and every
// later read returns zero values, so callers check err once at the end.
type wireReader struct {
	rest []byte
	err  error
}

func (r *wireReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.rest = nil
}

func (r *wireReader) uint32() uint32 {
	if r.err != nil {
		return 0
	}
	if len(r.rest) < 4 {
		r.fail(errTruncated)
		return 0
	}
	v := binary.BigEndian.Uint32(r.rest)
	r.rest = r.rest[4:]
	return v
}

// bytes reads a length-prefixed string; the result aliases the input.
func (r *wireReader) bytes() []byte {
	n := r.uint32()
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(r.rest)) {
		r.fail(errTruncated)
		return nil
	}
	v := r.rest[:n:n]
	r.rest = r.rest[n:]
	return v
}

func (r *wireReader) text() string { return string(r.bytes()) }

// mpint reads a non-negative multiple-precision integer. Key material is
// never negative, so a set sign bit means a malformed key.
func (r *wireReader) mpint() *big.Int {
	b := r.bytes()
	if r.err != nil {
		return new(big.Int)
	}
	if len(b) > maxMPIntBytes {
		r.fail(fmt.Errorf("integer of %d bytes is too large", len(b)))
		return new(big.Int)
	}
	if len(b) > 0 && b[0]&0x80 != 0 {
		r.fail(errors.New("negative integer"))
		return new(big.Int)
	}
	return new(big.Int).SetBytes(b)
}

// finish reports the first failure, or trailing bytes nothing accounts for.
func (r *wireReader) finish() error {
	if r.err != nil {
		return r.err
	}
	if len(r.rest) != 0 {
		return fmt.Errorf("%d unexpected bytes at the end", len(r.rest))
	}
	return nil
}

// wireWriter builds RFC 4251 §5 values.
type wireWriter struct {
	buf []byte
}

func (w *wireWriter) uint32(v uint32) {
	w.buf = binary.BigEndian.AppendUint32(w.buf, v)
}

func (w *wireWriter) bytes(b []byte) {
	w.uint32(uint32(len(b)))
	w.buf = append(w.buf, b...)
}

func (w *wireWriter) text(s string) {
	w.uint32(uint32(len(s)))
	w.buf = append(w.buf, s...)
}

// mpint writes a non-negative integer in its shortest two's-complement
// form: zero is empty, and a leading 0x00 keeps a set top bit from reading
// as a sign.
func (w *wireWriter) mpint(n *big.Int) {
	b := n.Bytes()
	if len(b) > 0 && b[0]&0x80 != 0 {
		b = append([]byte{0}, b...)
	}
	w.bytes(b)
}
