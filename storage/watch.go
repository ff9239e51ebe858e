package storage

import "context"

// Watcher is implemented by a Store that reports the keys its commits
// write, so that a process learns of changes made by another process on a
// shared store (etcdstore), or by another goroutine, without polling.
type Watcher interface {
	// Watch calls fn with each key under prefix that a transaction
	// committed after Watch returned put or deleted, whichever process
	// committed it, soon after the commit. The keys of one commit come in
	// any order and a key may be reported twice. When changes may have
	// been missed (a broken connection to a shared store), fn is called
	// with prefix itself: everything under it must be read again.
	//
	// fn runs one call at a time, in a goroutine of the store (etcdstore)
	// or in the goroutine that commits, before its Update returns
	// (memstore, boltstore); it must return quickly and must not start a
	// transaction nor call stop.
	// stop ends the watch and returns once no call of fn is in progress;
	// closing the store ends it too. Watch fails with an error of the
	// store (closed, unreachable) or of ctx, which bounds only Watch
	// itself.
	Watch(ctx context.Context, prefix string, fn func(key string)) (stop func(), err error)
}

// Watch calls s.Watch when s is a Watcher. For any other store it reports
// nothing and stop does nothing: the caller's own timers must then see
// what others changed.
func Watch(ctx context.Context, s Store, prefix string, fn func(key string)) (stop func(), err error) {
	if w, ok := s.(Watcher); ok {
		return w.Watch(ctx, prefix, fn)
	}
	return func() {}, nil
}

// Watch watches the keys under prefix in the view, as Watcher.Watch; the
// keys given to fn are the view's.
func (s *subStore) Watch(ctx context.Context, prefix string, fn func(key string)) (stop func(), err error) {
	return Watch(ctx, s.inner, s.prefix+prefix, func(key string) {
		if len(key) < len(s.prefix) {
			return
		}
		fn(key[len(s.prefix):])
	})
}
