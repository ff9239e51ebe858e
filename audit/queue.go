package audit

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/keelhq/keel"
)

// The records a Broker sends to a File are written by the File's writer
// goroutine, which writes all the records queued when it looks in one
// write: under load, a write(2) and a turn of the file's lock serve many
// records. The writer is started by the first record posted and kept,
// parked on a channel between bursts, until Close: a burst costs a wake,
// not a goroutine's start (and its stack grown again). It never holds the
// record's caller, who waits for the result within the Broker's timeout.

// job is a record on its way to a File, salted and encoded by the Broker
// (appendRecordHead).
type job struct {
	head []byte
	// w is told the write's result once, by the writer.
	w *write
}

// queue is a File's records waiting for its writer.
type queue struct {
	mu      sync.Mutex
	jobs    []job
	running bool // the writer is on its way to take jobs (not parked)
	stopped bool // Close stopped the writer: posts are refused
	// wake (capacity 1) unparks the writer; done is closed when it
	// returned. Both are nil until the first post starts the writer.
	wake chan struct{}
	done chan struct{}
}

// maxBatch is the largest buffer of lines a File keeps for the next
// write.
const maxBatch = 1 << 20

// post queues head, a record begun by appendRecordHead, to be chained and
// written; w is told the result (write.finish) on the writer's goroutine,
// or at once when the File is closed. post does not wait for the file.
func (d *File) post(head []byte, w *write) {
	q := &d.q
	q.mu.Lock()
	if q.stopped {
		q.mu.Unlock()
		w.finish(head, fmt.Errorf("audit: %s: the device is closed: %w", d.path, keel.KindUnavailable))
		return
	}
	q.jobs = append(q.jobs, job{head: head, w: w})
	wake := !q.running
	q.running = true
	if q.wake == nil {
		q.wake, q.done = make(chan struct{}, 1), make(chan struct{})
		go d.writer(q.wake, q.done)
	}
	q.mu.Unlock()
	if wake {
		select {
		case q.wake <- struct{}{}:
		default: // a wake is already pending
		}
	}
}

// writer writes the queued records, and parks on wake when it finds none,
// until stop finds it there.
func (d *File) writer(wake <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	var jobs []job
	for range wake {
		// The goroutines ready to run go first: under load, they are
		// requests on their way to post a record, which this write then
		// takes too.
		runtime.Gosched()
		for {
			d.q.mu.Lock()
			if len(d.q.jobs) == 0 {
				d.q.running = false
				stopped := d.q.stopped
				d.q.mu.Unlock()
				if stopped {
					return
				}
				break
			}
			jobs, d.q.jobs = d.q.jobs, jobs[:0]
			d.q.mu.Unlock()
			d.mu.Lock()
			err := d.ready()
			if err == nil {
				batch, seq, last := d.chain(jobs)
				err = d.append(batch, seq, last)
			}
			d.mu.Unlock()
			for _, j := range jobs {
				j.w.finish(j.head, err)
			}
			clear(jobs)
		}
	}
}

// stop refuses further posts, and waits for the writer to write the
// records queued and return.
func (d *File) stop() {
	q := &d.q
	q.mu.Lock()
	if q.stopped {
		q.mu.Unlock()
		return
	}
	q.stopped = true
	done := q.done
	if done != nil && !q.running {
		q.running = true
		q.wake <- struct{}{} // the writer is parked: no wake is pending
	}
	q.mu.Unlock()
	if done != nil {
		<-done
	}
}
