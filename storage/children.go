package storage

import "strings"

// Children calls fn, in ascending order, for each immediate child of
// prefix: name for a key prefix+name where name holds no "/", and name+"/"
// once for a folder, whatever it holds below. A name that is both a key and
// a folder is given twice, as "name" and "name/". Listing starts after the
// child named after when it is not empty, so that pages can follow each
// other.
//
// Each folder is passed over with one seek, so the cost is in proportion to
// the children listed, not to the keys below them. fn may return StopScan to
// end the listing early; any other error ends it and is returned.
func Children(tx Tx, prefix, after string, fn func(name string) error) error {
	opts := ScanOptions{KeysOnly: true}
	switch {
	case after == "":
	case strings.HasSuffix(after, "/"):
		opts.From = prefix + pastFolder(after)
	default:
		opts.After = prefix + after
	}
	for {
		stopped, next := false, ""
		err := tx.Scan(prefix, opts, func(key string, _ []byte) error {
			name := key[len(prefix):]
			skip := false
			if i := strings.IndexByte(name, '/'); i >= 0 {
				name, skip = name[:i+1], true
			}
			if err := fn(name); err != nil {
				stopped = err == StopScan
				return err
			}
			if skip {
				next = prefix + pastFolder(name)
				return StopScan
			}
			return nil
		})
		if err != nil || stopped || next == "" {
			return err
		}
		opts = ScanOptions{KeysOnly: true, From: next}
	}
}

// pastFolder returns the least string greater than every string that starts
// with folder, which ends in "/": the "/" becomes "0", the byte after it.
func pastFolder(folder string) string {
	return folder[:len(folder)-1] + "0"
}
