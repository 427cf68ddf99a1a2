//! A bounded pool of I/O worker threads.
//!
//! `WILLNEED` and `readahead(2)` submit their I/O synchronously in the
//! calling thread (DESIGN.md "Kernel facts"), so a caller that issues many
//! chunks one after the other waits for each submission in turn. The pool
//! runs `threads` workers fed through a queue of at most `queue_bound` jobs;
//! [`Pool::submit`] blocks while the queue is full (back-pressure, never an
//! unbounded backlog) and [`Pool::wait`] blocks until every job submitted so
//! far has run, returning the first error any of them hit.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crate::advise::{chunks, fetch_chunks, Fetch};

type Job = Box<dyn FnOnce() -> io::Result<()> + Send>;

#[derive(Default)]
struct State {
    pending: usize,
    first_error: Option<io::Error>,
}

struct Shared {
    state: Mutex<State>,
    idle: Condvar,
}

/// A bounded worker pool for I/O submission (see the module docs).
pub struct Pool {
    tx: Option<SyncSender<Job>>,
    workers: Vec<JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl Pool {
    /// A pool of `threads` workers (at least 1) with a queue of at most
    /// `queue_bound` waiting jobs (at least 1).
    pub fn new(threads: usize, queue_bound: usize) -> Pool {
        let (tx, rx) = sync_channel::<Job>(queue_bound.max(1));
        let rx = Arc::new(Mutex::new(rx));
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            idle: Condvar::new(),
        });
        let workers = (0..threads.max(1))
            .map(|i| {
                let rx = Arc::clone(&rx);
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name(format!("outrider-io-{i}"))
                    .spawn(move || worker(&rx, &shared))
                    .expect("spawn I/O worker")
            })
            .collect();
        Pool {
            tx: Some(tx),
            workers,
            shared,
        }
    }

    /// Number of worker threads.
    pub fn threads(&self) -> usize {
        self.workers.len()
    }

    /// Jobs submitted and not yet finished.
    pub fn pending(&self) -> usize {
        self.shared.state.lock().unwrap().pending
    }

    /// Let the workers finish what is queued and end them (what
    /// [`Drop`] does, for a caller that must be single-threaded before it
    /// forks). Jobs submitted afterwards are dropped without running.
    pub fn shutdown(&mut self) {
        self.tx.take();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }

    /// Queue one job; blocks while the queue is full.
    pub fn submit(&self, job: impl FnOnce() -> io::Result<()> + Send + 'static) {
        let Some(tx) = self.tx.as_ref() else {
            return; // shut down
        };
        self.shared.state.lock().unwrap().pending += 1;
        if tx.send(Box::new(job)).is_err() {
            // All workers gone (cannot happen while the pool lives).
            let mut st = self.shared.state.lock().unwrap();
            st.pending -= 1;
        }
    }

    /// Queue the fetch of `[off, off + len)` of `fd` as one job per chunk of
    /// at most `cap` bytes.
    pub fn fetch(&self, fd: &Arc<OwnedFd>, off: u64, len: u64, cap: u64, how: Fetch) {
        for (o, n) in chunks(off, len, cap) {
            let fd = Arc::clone(fd);
            self.submit(move || fetch_chunks(fd.as_fd(), o, n, n, how));
        }
    }

    /// Block until every job submitted so far has run; the first error any
    /// job returned since the previous `wait`, if one did.
    pub fn wait(&self) -> io::Result<()> {
        let mut st = self.shared.state.lock().unwrap();
        while st.pending > 0 {
            st = self.shared.idle.wait(st).unwrap();
        }
        match st.first_error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

fn worker(rx: &Mutex<Receiver<Job>>, shared: &Shared) {
    loop {
        let job = match rx.lock().unwrap().recv() {
            Ok(job) => job,
            Err(_) => return,
        };
        let r = job();
        let mut st = shared.state.lock().unwrap();
        if let Err(e) = r {
            st.first_error.get_or_insert(e);
        }
        st.pending -= 1;
        if st.pending == 0 {
            shared.idle.notify_all();
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shutdown();
    }
}
