package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keelhq/keel"
)

// Device writes audit records somewhere. Write may block; the Broker
// bounds how long it waits. File is a Device; a program may add its own.
type Device interface {
	Write(r *Record) error
}

// Broker sends every record to the enabled devices, each record salted
// with its device's salt, and fails closed: Record returns an error when
// devices are enabled and none wrote the record, so that the caller
// refuses the operation (as Vault does). A device that does not answer
// within Options.Timeout is given up on for that record, and skipped
// until its blocked write returns, so that a hung device delays no
// operation by more than the timeout. A Broker is safe for concurrent use.
type Broker struct {
	clock   keel.Clock
	timeout time.Duration

	mu      sync.RWMutex
	devices map[string]*entry
	list    []*entry // of devices, replaced (never changed) when they change
	// bufs are the encodings of records on their way to a File, kept
	// for the next (of *[]byte).
	bufs sync.Pool
	// calls are Record's waits (of *call), kept for the next.
	calls sync.Pool
	// watched are the Records waiting for devices, in the order of
	// their deadlines, for the watchdog (see watch).
	watched struct {
		sync.Mutex
		head, tail *call
		running    bool // a watchdog goroutine is on its way
	}
	// failed counts the Records that failed: requests, then responses.
	failed [2]atomic.Uint64
}

// Failures returns how many request records and how many response
// records Record failed to write (it returned an error: the operations
// refused, or the answers withheld), since the Broker was made.
func (b *Broker) Failures() (requests, responses uint64) {
	return b.failed[0].Load(), b.failed[1].Load()
}

// fail counts a failed Record of r and returns err.
func (b *Broker) fail(r *Record, err error) error {
	i := 0
	if r.Type != TypeRequest {
		i = 1
	}
	b.failed[i].Add(1)
	return err
}

// maxBuf is the largest encoding of a record kept for the next.
const maxBuf = 64 << 10

// entry is an enabled device.
type entry struct {
	name string
	dev  Device
	salt *Salt
	// stuck counts the device's writes that a Record gave up on and that
	// have not returned yet: while it is not zero, records skip the
	// device at once.
	stuck atomic.Int64
}

// write is one record's write to one device, which either ends (the
// writer sets done first) or is given up on (Record sets done first, and
// counts it stuck until it ends).
type write struct {
	e    *entry
	done atomic.Bool
	// i is the device's index in the record's devices, and results where
	// the writer reports.
	i       int
	results chan result
	// buf holds the record's encoding on its way to a File (of b.bufs).
	buf *[]byte
	b   *Broker
}

// result is a device's answer to one record.
type result struct {
	i   int
	err error
}

// call is one Record's wait for its devices, kept for the next Record
// (Broker.calls) once every device answered.
type call struct {
	results chan result // room for every device's result and the watchdog's
	writes  []write
	// Of the watchdog, under Broker.watched's lock: the place of the
	// call among the waiting ones, its deadline, and whether the
	// watchdog gave up on it (and sent expired on results).
	prev, next *call
	deadline   time.Time
	expired    bool
}

// expired is the result the watchdog sends to a call whose deadline
// passed.
const expired = -1

// end is called by the writer when the device's Write has returned.
func (w *write) end() {
	if !w.done.CompareAndSwap(false, true) {
		w.e.stuck.Add(-1) // it had been given up on
	}
}

// abandon is called by Record when it stops waiting for w.
func (w *write) abandon() {
	if w.done.CompareAndSwap(false, true) {
		w.e.stuck.Add(1)
	}
}

// finish is called once by a File's writer with head, the record's line
// (its buffer to keep), and the write's result. w is not touched after
// the result is sent: Record may then use it again.
func (w *write) finish(head []byte, err error) {
	w.end()
	if cap(head) <= maxBuf {
		*w.buf = head
		w.b.bufs.Put(w.buf)
	}
	if err != nil {
		err = fmt.Errorf("device %q: %w", w.e.name, err)
	}
	w.results <- result{w.i, err}
}

// Options configure a Broker. A nil *Options, and each zero field, means
// the default.
type Options struct {
	// Clock times the wait for a device. Nil: keel.SystemClock{}.
	Clock keel.Clock
	// Timeout is how long Record waits for one device. Zero: 1s.
	Timeout time.Duration
}

const defaultTimeout = time.Second

// NewBroker returns a Broker with no device enabled.
func NewBroker(opts *Options) *Broker {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	b := &Broker{clock: keel.ClockOrSystem(o.Clock), timeout: o.Timeout, devices: map[string]*entry{}}
	b.bufs.New = func() any { return new([]byte) }
	return b
}

// Enable adds d under name, its records salted with salt. A name already
// enabled is keel.KindAlreadyExists; an empty name or a nil device or salt
// is keel.KindInvalid.
func (b *Broker) Enable(name string, d Device, salt *Salt) error {
	var v keel.Validation
	if name == "" {
		v.Add("Name", "is required")
	}
	if d == nil {
		v.Add("Device", "is required")
	}
	if salt == nil {
		v.Add("Salt", "is required")
	}
	if err := v.Err(); err != nil {
		return fmt.Errorf("audit: enable: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.devices[name]; ok {
		return fmt.Errorf("audit: device %q is already enabled: %w", name, keel.KindAlreadyExists)
	}
	e := &entry{name: name, dev: d, salt: salt}
	b.devices[name] = e
	b.list = append(slices.Clip(b.list), e)
	return nil
}

// Disable removes the device name and returns it, so that the caller may
// close it. A name not enabled is keel.KindNotFound.
func (b *Broker) Disable(name string) (Device, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.devices[name]
	if !ok {
		return nil, fmt.Errorf("audit: no device %q is enabled: %w", name, keel.KindNotFound)
	}
	delete(b.devices, name)
	b.list = slices.DeleteFunc(slices.Clone(b.list), func(x *entry) bool { return x == e })
	return e.dev, nil
}

// Devices returns the names of the enabled devices, sorted.
func (b *Broker) Devices() []string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	names := make([]string, 0, len(b.devices))
	for n := range b.devices {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Hash returns value hashed with the salt of the device name, as its
// records carry it (Vault's sys/audit-hash). A name not enabled is
// keel.KindNotFound.
func (b *Broker) Hash(name, value string) (string, error) {
	b.mu.RLock()
	e, ok := b.devices[name]
	b.mu.RUnlock()
	if !ok {
		return "", fmt.Errorf("audit: no device %q is enabled: %w", name, keel.KindNotFound)
	}
	return e.salt.Hash(value), nil
}

// Record writes r to every enabled device, side by side. It returns nil
// when no device is enabled or at least one wrote r, and otherwise an error
// of kind keel.KindUnavailable naming each device's failure: the caller
// must then refuse the operation (for a request record) or withhold the
// answer (for a response record). Record returns within about
// Options.Timeout, or sooner when ctx ends. It keeps no reference to r
// once it returned (the devices that write on write copies), so that the
// caller may use r again.
func (b *Broker) Record(ctx context.Context, r *Record) error {
	b.mu.RLock()
	devices := b.list
	b.mu.RUnlock()
	if len(devices) == 0 {
		return nil
	}
	c, _ := b.calls.Get().(*call)
	if c == nil || cap(c.results) < len(devices)+1 {
		c = &call{results: make(chan result, len(devices)+1)}
	}
	c.writes = append(c.writes[:0], make([]write, len(devices))...)
	b.watch(c)
	for i, e := range devices {
		if e.stuck.Load() > 0 {
			c.results <- result{i, fmt.Errorf("device %q: an earlier write is still blocked", e.name)}
			continue
		}
		w := &c.writes[i]
		w.i, w.results, w.b = i, c.results, b
		if f, ok := e.dev.(*File); ok {
			// The record is salted and encoded here, and queued for the
			// file's writer, which only chains and writes it.
			w.buf = b.bufs.Get().(*[]byte)
			head, err := appendRecordHead((*w.buf)[:0], r, e.salt)
			if err != nil {
				b.bufs.Put(w.buf)
				c.results <- result{i, fmt.Errorf("device %q: audit: encode a record: %w", e.name, errors.Join(err, keel.KindInvalid))}
				continue
			}
			w.e = e
			f.post(head, w)
			continue
		}
		w.e = e
		salted := e.salt.Apply(r) // here, so that r is not read after Record returns
		go func() {
			err := e.dev.Write(salted)
			w.end()
			if err != nil {
				err = fmt.Errorf("device %q: %w", e.name, err)
			}
			w.results <- result{w.i, err}
		}()
	}
	var errs []string
	done := ctx.Done()
	for n := range devices {
		var res result
		if done == nil {
			res = <-c.results
		} else {
			select {
			case res = <-c.results:
			case <-done:
				b.unwatch(c) // c is not kept: its devices, or the watchdog, may still answer
				return b.fail(r, fmt.Errorf("audit: record the %s: %w", r.Type, ctx.Err()))
			}
		}
		switch {
		case res.i == expired:
			for i := range c.writes {
				if c.writes[i].e != nil {
					c.writes[i].abandon() // no effect on a write that ended
				}
			}
			return b.fail(r, fmt.Errorf("audit: no device recorded the %s within %v: %w", r.Type, b.timeout, keel.KindUnavailable))
		case res.err == nil:
			if b.unwatch(c) && n == len(devices)-1 {
				b.calls.Put(c) // every device answered: c is free
			}
			return nil // the others write on, unwatched
		}
		errs = append(errs, res.err.Error())
	}
	if b.unwatch(c) {
		b.calls.Put(c)
	}
	return b.fail(r, fmt.Errorf("audit: no device recorded the %s: %s: %w", r.Type, strings.Join(errs, "; "), keel.KindUnavailable))
}

// watch puts c, a Record's wait that starts, under the watchdog: when it
// still waits Options.Timeout from now, the watchdog sends it expired.
// One watchdog goroutine serves every Record of b: it sleeps until the
// earliest deadline, and returns when no Record waits, so that a record
// costs no timer of its own.
func (b *Broker) watch(c *call) {
	w := &b.watched
	w.Lock()
	// Under the lock, so that the calls are in the order of their
	// deadlines.
	c.deadline = b.clock.Now().Add(b.timeout)
	c.expired, c.prev, c.next = false, w.tail, nil
	if w.tail != nil {
		w.tail.next = c
	} else {
		w.head = c
	}
	w.tail = c
	start := !w.running
	w.running = true
	w.Unlock()
	if start {
		go b.watchdog()
	}
}

// unwatch takes c from the watchdog, and returns false when the
// watchdog gave up on it first (expired is then in c.results: c is not
// to be kept for another Record).
func (b *Broker) unwatch(c *call) bool {
	w := &b.watched
	w.Lock()
	defer w.Unlock()
	if c.expired {
		return false
	}
	b.unlink(c)
	return true
}

// unlink removes c from the watched calls. Called with b.watched's lock.
func (b *Broker) unlink(c *call) {
	w := &b.watched
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		w.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		w.tail = c.prev
	}
	c.prev, c.next = nil, nil
}

// watchdog sends expired to each watched call whose deadline passed, and
// returns when none is left. Deadlines come in the order of the calls
// (the timeout is the same for all), so that it looks at the first only.
func (b *Broker) watchdog() {
	var timer keel.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	w := &b.watched
	for {
		w.Lock()
		now := b.clock.Now()
		for c := w.head; c != nil && !c.deadline.After(now); c = w.head {
			b.unlink(c)
			c.expired = true
			c.results <- result{i: expired} // never blocks: there is room for it
		}
		if w.head == nil {
			w.running = false
			w.Unlock()
			return
		}
		wait := w.head.deadline.Sub(now)
		w.Unlock()
		if timer == nil {
			timer = b.clock.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		<-timer.C()
	}
}
