package ldapengine

import "sync"

// entryLocks serialises the password changes of each directory entry and
// lets those of different entries overlap: a change is a write-ahead
// record, a directory round trip and a second record, and a round trip
// held under one engine-wide lock would make every caller wait for every
// other. Keys are "role/NAME" and "library/SET/ACCOUNT": an entry belongs
// to one role or one library account at a time; the verifications after a
// restore take "verify/" and the entry's key first (restored.go). The zero value is ready
// to use.
type entryLocks struct {
	mu sync.Mutex
	m  map[string]*entryLock
}

type entryLock struct {
	mu    sync.Mutex
	users int // holders and waiters; the lock leaves the map at zero
}

// lock locks key and returns its unlock.
func (l *entryLocks) lock(key string) (unlock func()) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*entryLock{}
	}
	el := l.m[key]
	if el == nil {
		el = &entryLock{}
		l.m[key] = el
	}
	el.users++
	l.mu.Unlock()
	el.mu.Lock()
	return func() {
		el.mu.Unlock()
		l.mu.Lock()
		if el.users--; el.users == 0 {
			delete(l.m, key)
		}
		l.mu.Unlock()
	}
}
