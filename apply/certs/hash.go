package certs

import (
	"bytes"
	"crypto/sha1"
	"encoding/asn1"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"unicode/utf16"
	"unicode/utf8"
)

// SubjectHash is OpenSSL's X509_NAME_hash of a DER-encoded name (a
// certificate's RawSubject): the first four bytes of the SHA-1 of the
// name's canonical encoding, read little-endian. It names the
// /etc/ssl/certs/<hash>.N links that `openssl rehash` makes and TLS
// libraries look certificates up by.
func SubjectHash(rawName []byte) (uint32, error) {
	canon, err := canonicalName(rawName)
	if err != nil {
		return 0, err
	}
	sum := sha1.Sum(canon)
	return binary.LittleEndian.Uint32(sum[:4]), nil
}

// ASN.1 universal tags of the string types OpenSSL canonicalises.
const (
	tagUTF8      = 12
	tagPrintable = 19
	tagT61       = 20
	tagIA5       = 22
	tagVisible   = 26
	tagUniversal = 28
	tagBMP       = 30
)

// canonicalName is OpenSSL's x509_name_canon: each RDN's SET re-encoded
// with its string values turned into lower-case UTF8Strings with the
// white space trimmed and collapsed, the SETs concatenated without the
// outer SEQUENCE.
func canonicalName(raw []byte) ([]byte, error) {
	var seq asn1.RawValue
	rest, err := asn1.Unmarshal(raw, &seq)
	if err != nil || len(rest) > 0 || seq.Tag != asn1.TagSequence {
		return nil, errors.New("parse the name: not a DER SEQUENCE")
	}
	var out bytes.Buffer
	for body := seq.Bytes; len(body) > 0; {
		var set asn1.RawValue
		if body, err = asn1.Unmarshal(body, &set); err != nil || set.Tag != asn1.TagSet {
			return nil, fmt.Errorf("parse the name: want an RDN SET: %v", err)
		}
		var entries [][]byte
		for sb := set.Bytes; len(sb) > 0; {
			var atv asn1.RawValue
			if sb, err = asn1.Unmarshal(sb, &atv); err != nil || atv.Tag != asn1.TagSequence {
				return nil, fmt.Errorf("parse the name: want an attribute SEQUENCE: %v", err)
			}
			var oid, value asn1.RawValue
			vb, err := asn1.Unmarshal(atv.Bytes, &oid)
			if err != nil || oid.Tag != asn1.TagOID {
				return nil, fmt.Errorf("parse the name: want an attribute type: %v", err)
			}
			if _, err := asn1.Unmarshal(vb, &value); err != nil {
				return nil, fmt.Errorf("parse the name: attribute value: %w", err)
			}
			canonValue := value.FullBytes
			if value.Class == asn1.ClassUniversal {
				if s, ok := toUTF8(value.Tag, value.Bytes); ok {
					canonValue = derTLV(tagUTF8, canonString(s))
				}
			}
			entries = append(entries, derTLV(asn1.TagSequence|0x20, append(append([]byte{}, oid.FullBytes...), canonValue...)))
		}
		// DER orders the members of a SET OF by their encodings.
		sort.Slice(entries, func(i, j int) bool { return bytes.Compare(entries[i], entries[j]) < 0 })
		out.Write(derTLV(asn1.TagSet|0x20, bytes.Join(entries, nil)))
	}
	return out.Bytes(), nil
}

// toUTF8 converts the string types OpenSSL's ASN1_MASK_CANON covers.
func toUTF8(tag int, b []byte) ([]byte, bool) {
	switch tag {
	case tagUTF8, tagPrintable, tagIA5, tagVisible:
		return b, true
	case tagT61:
		// OpenSSL reads T61String as Latin-1.
		var out []byte
		for _, c := range b {
			out = utf8.AppendRune(out, rune(c))
		}
		return out, true
	case tagBMP:
		if len(b)%2 != 0 {
			return nil, false
		}
		u := make([]uint16, len(b)/2)
		for i := range u {
			u[i] = binary.BigEndian.Uint16(b[2*i:])
		}
		return []byte(string(utf16.Decode(u))), true
	case tagUniversal:
		if len(b)%4 != 0 {
			return nil, false
		}
		var out []byte
		for i := 0; i < len(b); i += 4 {
			out = utf8.AppendRune(out, rune(binary.BigEndian.Uint32(b[i:])))
		}
		return out, true
	}
	return nil, false
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// canonString trims white space, collapses inner runs of it to one
// space and lower-cases ASCII letters, byte by byte as OpenSSL does.
func canonString(s []byte) []byte {
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isSpace(c) {
			out = append(out, ' ')
			for i+1 < len(s) && isSpace(s[i+1]) {
				i++
			}
			continue
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		out = append(out, c)
	}
	return out
}

// derTLV encodes a tag byte, a DER length and the contents.
func derTLV(tag int, content []byte) []byte {
	out := []byte{byte(tag)}
	n := len(content)
	switch {
	case n < 0x80:
		out = append(out, byte(n))
	default:
		var lb []byte
		for v := n; v > 0; v >>= 8 {
			lb = append([]byte{byte(v)}, lb...)
		}
		out = append(out, byte(0x80|len(lb)))
		out = append(out, lb...)
	}
	return append(out, content...)
}
