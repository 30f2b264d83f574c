package earlyrand

import (
	"bytes"
	"testing"
)

func TestReadFillsAndDiffers(t *testing.T) {
	a, b := make([]byte, 64), make([]byte, 64)
	Read(a)
	Read(b)
	if bytes.Equal(a, make([]byte, 64)) {
		t.Fatal("Read left the buffer zero")
	}
	if bytes.Equal(a, b) {
		t.Fatal("two reads gave the same 64 bytes")
	}
}

func TestFillDiffers(t *testing.T) {
	a, b := make([]byte, 16), make([]byte, 16)
	fill(a)
	fill(b)
	if bytes.Equal(a, b) {
		t.Fatal("fill gave the same bytes twice")
	}
}

func TestReaderReadsWhole(t *testing.T) {
	buf := make([]byte, 1<<16)
	n, err := Reader.Read(buf)
	if err != nil || n != len(buf) {
		t.Fatalf("Read = %d, %v; want %d, nil", n, err, len(buf))
	}
}
