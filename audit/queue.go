package audit

import (
	"runtime"
	"sync"
)

// The records a Broker sends to a File are written by one goroutine at a
// time, which writes all the records queued when it looks in one write:
// under load, a write(2) and a turn of the file's lock serve many
// records. The goroutine returns when it finds the queue empty, and the
// next record starts another; it never holds the record's caller, who
// waits for the result within the Broker's timeout.

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
	running bool // a writer goroutine is on its way to take jobs
}

// maxBatch is the largest buffer of lines a File keeps for the next
// write.
const maxBatch = 1 << 20

// post queues head, a record begun by appendRecordHead, to be chained and
// written; w is told the result (write.finish) on the writer's goroutine.
// post does not wait for the file.
func (d *File) post(head []byte, w *write) {
	d.q.mu.Lock()
	d.q.jobs = append(d.q.jobs, job{head: head, w: w})
	start := !d.q.running
	d.q.running = true
	d.q.mu.Unlock()
	if start {
		go d.drain()
	}
}

// drain writes the queued records until it finds none.
func (d *File) drain() {
	// The goroutines ready to run go first: under load, they are
	// requests on their way to post a record, which this write then
	// takes too.
	runtime.Gosched()
	var jobs []job
	for {
		d.q.mu.Lock()
		if len(d.q.jobs) == 0 {
			d.q.running = false
			if cap(d.q.jobs) == 0 {
				d.q.jobs = jobs[:0] // kept for the next records
			}
			d.q.mu.Unlock()
			return
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
