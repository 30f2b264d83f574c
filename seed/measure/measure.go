// Package measure extends the digests of the seed parts an instance
// applies into a TPM 2.0 PCR, so that a remote attestation can prove what
// configured the machine, and keeps an event log to replay them.
//
// PCR 12 (systemd puts the kernel command line and the credentials it is
// given there: configuration the OS is handed at boot). One event per
// part applied, in the order meta-data, user-data, vendor-data,
// network-config; the SHA-256 bank is extended with
//
//	SHA-256("seedinit seed part\x00" + PART + "\x00" + CONTENT)
//
// the part's name bound to its content, so that no part can pass for
// another. The log is JSON lines, one per event:
// {"pcr":12,"part":"user-data","digest":"sha256:<hex>","content_sha256":"<hex>"}.
// A verifier replays it: PCR = SHA-256(PCR || digest), from 32 zero bytes
// when nothing else extends the PCR before seedinit. An event whose
// command reached the TPM but whose answer never came is logged with
// "unconfirmed": true: the TPM may or may not have extended it, and a
// verifier replays both ways.
package measure

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// PCR is the register seed parts are extended into.
const PCR = 12

// Event is one measured part, as the log holds it.
type Event struct {
	PCR           int    `json:"pcr"`
	Part          string `json:"part"`
	Digest        string `json:"digest"`
	ContentSHA256 string `json:"content_sha256"`
	Unconfirmed   bool   `json:"unconfirmed,omitempty"`
}

// EventFor is the event that measures content as part.
func EventFor(part string, content []byte) (Event, [32]byte) {
	h := sha256.New()
	h.Write([]byte("seedinit seed part\x00" + part + "\x00"))
	h.Write(content)
	var d [32]byte
	copy(d[:], h.Sum(nil))
	c := sha256.Sum256(content)
	return Event{PCR: PCR, Part: part, Digest: "sha256:" + hex.EncodeToString(d[:]), ContentSHA256: hex.EncodeToString(c[:])}, d
}

// Replay is the PCR's value after the events, from start.
func Replay(start [32]byte, digests ...[32]byte) [32]byte {
	pcr := start
	for _, d := range digests {
		pcr = sha256.Sum256(append(pcr[:], d[:]...))
	}
	return pcr
}

// MarshalLog writes events as JSON lines.
func MarshalLog(events []Event) []byte {
	var out []byte
	for _, e := range events {
		b, _ := json.Marshal(e)
		out = append(append(out, b...), '\n')
	}
	return out
}

// TPM 2.0 command codes and constants (TPM 2.0 Library, Part 2).
const (
	tpmSTSessions   = 0x8002
	tpmCCPCRExtend  = 0x00000182
	tpmRSPassword   = 0x40000009
	tpmAlgSHA256    = 0x000B
	maxResponseSize = 4096
)

// TPM sends a command to a TPM 2.0 and returns its answer.
type TPM interface {
	Transact(cmd []byte) ([]byte, error)
}

// Stream is a TPM behind a stream that answers each command in one read
// (swtpm's socket).
type Stream struct{ io.ReadWriter }

// Transact writes cmd and reads the answer.
func (s Stream) Transact(cmd []byte) ([]byte, error) {
	if _, err := s.Write(cmd); err != nil {
		return nil, &SendError{Err: err}
	}
	resp := make([]byte, maxResponseSize)
	n, err := s.Read(resp)
	if err != nil {
		return nil, err
	}
	return resp[:n], nil
}

// SendError is a command that never reached the TPM.
type SendError struct{ Err error }

func (e *SendError) Error() string { return "send: " + e.Err.Error() }
func (e *SendError) Unwrap() error { return e.Err }

// Extend extends PCR pcr's SHA-256 bank with digest through tpm. An error
// that is not a *SendError came after the command reached the TPM, which
// may have extended the PCR.
func Extend(tpm TPM, pcr uint32, digest [32]byte) error {
	var body []byte
	body = binary.BigEndian.AppendUint32(body, pcr) // the PCR's handle is its index
	// Authorization: one empty password session.
	var auth []byte
	auth = binary.BigEndian.AppendUint32(auth, tpmRSPassword)
	auth = binary.BigEndian.AppendUint16(auth, 0) // nonce
	auth = append(auth, 0)                        // session attributes
	auth = binary.BigEndian.AppendUint16(auth, 0) // hmac (the empty password)
	body = binary.BigEndian.AppendUint32(body, uint32(len(auth)))
	body = append(body, auth...)
	body = binary.BigEndian.AppendUint32(body, 1) // one digest
	body = binary.BigEndian.AppendUint16(body, tpmAlgSHA256)
	body = append(body, digest[:]...)

	cmd := binary.BigEndian.AppendUint16(nil, tpmSTSessions)
	cmd = binary.BigEndian.AppendUint32(cmd, uint32(10+len(body)))
	cmd = binary.BigEndian.AppendUint32(cmd, tpmCCPCRExtend)
	cmd = append(cmd, body...)
	resp, err := tpm.Transact(cmd)
	if err != nil {
		return fmt.Errorf("TPM2_PCR_Extend: %w", err)
	}
	if len(resp) < 10 {
		return fmt.Errorf("TPM2_PCR_Extend: short answer (%d bytes)", len(resp))
	}
	if rc := binary.BigEndian.Uint32(resp[6:10]); rc != 0 {
		return fmt.Errorf("TPM2_PCR_Extend of PCR %d: TPM response code %#x", pcr, rc)
	}
	return nil
}

// Reached says whether a failed Extend's command reached the TPM.
func Reached(err error) bool {
	var send *SendError
	return err != nil && !errors.As(err, &send)
}
