package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/keelhq/keel"
)

// VerifyResult describes an intact log: how many records it holds, the
// Seq of its first and last, and the hash of its last record's line (what
// the next record will carry in Chain.Prev).
type VerifyResult struct {
	Records  int
	FirstSeq uint64
	LastSeq  uint64
	LastHash string
}

// BreakError is where a log's chain breaks: the line (counted from 1) of
// the first record found edited, removed, reordered or cut, and why. It is
// of kind keel.KindInvalid.
type BreakError struct {
	Line   int
	Reason string
}

// Error returns "audit: line N: reason".
func (e *BreakError) Error() string { return fmt.Sprintf("audit: line %d: %s", e.Line, e.Reason) }

// Unwrap returns keel.KindInvalid.
func (e *BreakError) Unwrap() error { return keel.KindInvalid }

// Verify reads a log written by a File device (one file, or the files of
// a rotation in order, joined with io.MultiReader) and checks its chain:
// every line is a whole record; each record's Seq follows the one before
// it; each record's Chain.Prev is the hash of the line before it. The
// first record's Prev is not checked (its predecessor may be in an earlier
// file). The first break is returned as a *BreakError:
//
//   - a record whose Prev does not match the line before it, with Seq in
//     order: that line was edited;
//   - a Seq that skips: records were removed (or moved) before the line;
//   - a Seq at or below the one before it: the line is out of order;
//   - a last line without its newline, or a line that is not a record:
//     the log was cut or edited there.
//
// A chain cannot show the removal of records at the end of the log, nor an
// edit of the last record, from the log alone: compare LastSeq and
// LastHash with what the device reports (File keeps them) for that.
// Errors reading r are of kind keel.KindUnavailable.
func Verify(r io.Reader) (VerifyResult, error) {
	var res VerifyResult
	br := bufio.NewReaderSize(r, 64<<10)
	var prev []byte
	var prevSeq uint64
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			if len(b) > 0 {
				return res, &BreakError{Line: line, Reason: "the log ends within a record (truncated)"}
			}
			return res, nil
		}
		if err != nil {
			return res, fmt.Errorf("audit: read the log: %w", unavailable(err))
		}
		b = b[:len(b)-1]
		var rec Record
		if err := json.Unmarshal(b, &rec); err != nil || rec.Chain == nil || rec.Chain.Seq == 0 {
			return res, &BreakError{Line: line, Reason: "not an audit record (edited, or cut)"}
		}
		seq := rec.Chain.Seq
		if prev != nil {
			switch {
			case seq <= prevSeq:
				return res, &BreakError{Line: line, Reason: fmt.Sprintf("record %d comes after record %d (reordered)", seq, prevSeq)}
			case seq > prevSeq+1:
				return res, &BreakError{Line: line, Reason: fmt.Sprintf("records %d to %d are missing before record %d (removed, or moved)", prevSeq+1, seq-1, seq)}
			case rec.Chain.Prev != lineHash(prev):
				return res, &BreakError{Line: line - 1, Reason: fmt.Sprintf("record %d does not hash to what record %d carries (edited)", prevSeq, seq)}
			}
		} else {
			res.FirstSeq = seq
		}
		prev = append(prev[:0], b...)
		prevSeq = seq
		res.Records++
		res.LastSeq = seq
		res.LastHash = lineHash(b)
	}
}
