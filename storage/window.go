package storage

// Window calls fn, in ascending key order, for the entries at positions
// [offset, offset+limit) of the keys under prefix: one page of a listing
// by position. The offset entries before the page are passed over reading
// keys only, so a page's values are the only ones read. fn may return
// StopScan to end early; any other error ends the walk and is returned.
// A negative offset counts as zero; a limit of zero or less reads nothing.
func Window(tx Tx, prefix string, offset, limit int, fn func(key string, value []byte) error) error {
	if limit <= 0 {
		return nil
	}
	offset = max(offset, 0)
	after := ""
	if offset > 0 {
		n := 0
		err := tx.Scan(prefix, ScanOptions{KeysOnly: true}, func(key string, _ []byte) error {
			n++
			if n == offset {
				after = key
				return StopScan
			}
			return nil
		})
		if err != nil || n < offset {
			return err
		}
	}
	n := 0
	err := tx.Scan(prefix, ScanOptions{After: after}, func(key string, value []byte) error {
		if err := fn(key, value); err != nil {
			return err
		}
		n++
		if n == limit {
			return StopScan
		}
		return nil
	})
	if err == StopScan {
		return nil
	}
	return err
}
