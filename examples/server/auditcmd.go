package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/keelhq/keel/audit"
)

// auditCommand runs "audit verify FILE...": it verifies the chain of the
// log made of the files given, in order (the rotated files first), and
// prints what it found to out. It returns an error, so that the process
// exits with status 1, when the chain breaks or a file cannot be read.
func auditCommand(args []string, out io.Writer) error {
	if len(args) < 2 || args[0] != "verify" {
		fmt.Fprintln(out, "usage: server audit verify FILE...  (the files of one log, oldest first)")
		return usageError{errors.New("audit: want verify and at least one file")}
	}
	var files []io.Reader
	for _, p := range args[1:] {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		files = append(files, f)
	}
	res, err := audit.Verify(io.MultiReader(files...))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "intact: %d records, %d to %d; last hash %s\n", res.Records, res.FirstSeq, res.LastSeq, res.LastHash)
	return nil
}
