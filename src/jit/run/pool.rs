//! The worker threads that run a nest's outermost loop in parallel.
//!
//! One process-wide pool of parked threads (created on first use, grown to
//! the largest thread count asked for, at most [`MAX_THREADS`]). A job is
//! "run chunks `0..n` of this closure": the calling thread and up to
//! `threads - 1` workers take chunk numbers from one atomic counter until
//! none is left, and the call returns once every chunk has finished and no
//! worker still refers to the closure. Dispatching a job takes no heap
//! allocation (a mutex, two condition variables and atomics), so a kernel
//! call stays allocation-free with threads > 1 once the workers exist.
//!
//! **Spinning** (off by default). A worker that finishes a job can spin
//! for up to [`WORKER_SPIN`] watching for the next one before it sleeps on
//! the condition variable, and the caller, once its own chunks are done,
//! for up to [`CALLER_SPIN`] waiting for the workers to leave before it
//! sleeps ([`set_spin`] changes both, process-wide: the pool is shared by
//! every kernel). Both are zero: spinning lost in every measurement so far
//! (`benches/README.md`, "The pool's spinning").
//! A poster makes the wake-up system call only when some worker is asleep,
//! and a worker only when the caller is.
//!
//! The pool runs one job at a time: a call that finds it busy (another
//! thread's kernel call, or a kernel called from inside a job) runs its
//! chunks itself, on its own thread — never a deadlock, never an
//! oversubscribed machine.
//!
//! Owns the worker threads only; it knows nothing of kernels or nests.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

pub use crate::jit::options::{all_cores, MAX_POOL_THREADS as MAX_THREADS};

/// How long an idle worker watches for a new job before it sleeps (see
/// the module doc: zero, measured).
pub const WORKER_SPIN: Duration = Duration::ZERO;

/// How long the caller, its chunks done, watches for the workers to finish
/// theirs before it sleeps (zero, measured).
pub const CALLER_SPIN: Duration = Duration::ZERO;

/// The spin limits in nanoseconds (worker, caller); see [`set_spin`].
static SPIN_NS: [AtomicU64; 2] = [
    AtomicU64::new(WORKER_SPIN.as_nanos() as u64),
    AtomicU64::new(CALLER_SPIN.as_nanos() as u64),
];

/// Set how long workers and the caller spin before they sleep,
/// process-wide (default [`WORKER_SPIN`], [`CALLER_SPIN`]; zero sleeps at
/// once, as the pool did before it spun): a knob for
/// `examples/thread_sweep.rs`, which compares both in one process; not part
/// of the stable API.
#[doc(hidden)]
pub fn set_spin(worker: Duration, caller: Duration) {
    SPIN_NS[0].store(worker.as_nanos() as u64, Ordering::Relaxed);
    SPIN_NS[1].store(caller.as_nanos() as u64, Ordering::Relaxed);
}

/// Spin (with [`std::hint::spin_loop`]) until `done()` or the limit
/// `SPIN_NS[which]` has passed; whether `done()` became true.
fn spin_until(which: usize, done: impl Fn() -> bool) -> bool {
    let limit = Duration::from_nanos(SPIN_NS[which].load(Ordering::Relaxed));
    if limit.is_zero() {
        return done();
    }
    let start = Instant::now();
    loop {
        for _ in 0..64 {
            if done() {
                return true;
            }
            std::hint::spin_loop();
        }
        if start.elapsed() >= limit {
            return done();
        }
    }
}

static POSTED: AtomicU64 = AtomicU64::new(0);

/// How many jobs have been handed to the workers so far (calls that ran
/// serially, on one thread or with the pool busy, do not count).
pub fn jobs_posted() -> u64 {
    POSTED.load(Ordering::Relaxed)
}

#[derive(Clone, Copy)]
struct Job {
    run: unsafe fn(*const (), usize),
    ctx: *const (),
    chunks: usize,
}

struct State {
    /// Bumped for every job posted.
    generation: u64,
    job: Option<Job>,
    /// Workers that may still join the current job.
    wanted: usize,
    /// Workers inside the current job.
    active: usize,
    /// Workers spawned.
    workers: usize,
    /// Workers that have started (and made their thread's start-up
    /// allocations).
    started: usize,
    /// Workers asleep on `post` (a poster wakes them only if there are).
    sleeping: usize,
    /// Whether the caller sleeps on `left`.
    caller_waits: bool,
}

// SAFETY: `ctx` points to a `Sync` closure that the posting thread keeps
// alive until `active` is back to 0 and the job is withdrawn.
unsafe impl Send for State {}

struct Pool {
    state: Mutex<State>,
    /// Workers wait here for a job.
    post: Condvar,
    /// The caller waits here for the workers to leave its job.
    left: Condvar,
    /// The next chunk to run.
    next: AtomicUsize,
    /// Held by the thread whose job the pool runs.
    owner: Mutex<()>,
    /// `State::generation`, readable without the lock (spinning workers).
    generation: AtomicU64,
    /// Workers inside the current job's chunk loop (the caller spins on it).
    busy: AtomicUsize,
}

fn pool() -> &'static Pool {
    static P: OnceLock<Pool> = OnceLock::new();
    P.get_or_init(|| Pool {
        state: Mutex::new(State {
            generation: 0,
            job: None,
            wanted: 0,
            active: 0,
            workers: 0,
            started: 0,
            sleeping: 0,
            caller_waits: false,
        }),
        post: Condvar::new(),
        left: Condvar::new(),
        next: AtomicUsize::new(0),
        owner: Mutex::new(()),
        generation: AtomicU64::new(0),
        busy: AtomicUsize::new(0),
    })
}

fn worker(p: &'static Pool) {
    let mut seen = {
        let mut st = p.state.lock().unwrap_or_else(|e| e.into_inner());
        st.started += 1;
        p.left.notify_all();
        st.generation
    };
    loop {
        spin_until(0, || p.generation.load(Ordering::Acquire) != seen);
        let job = {
            let mut st = p.state.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if st.generation != seen {
                    seen = st.generation;
                    if st.wanted > 0 {
                        if let Some(j) = st.job {
                            st.wanted -= 1;
                            st.active += 1;
                            p.busy.fetch_add(1, Ordering::AcqRel);
                            break j;
                        }
                    }
                }
                st.sleeping += 1;
                st = p.post.wait(st).unwrap_or_else(|e| e.into_inner());
                st.sleeping -= 1;
            }
        };
        loop {
            let i = p.next.fetch_add(1, Ordering::AcqRel);
            if i >= job.chunks {
                break;
            }
            // SAFETY: the job is live (`active` counts us in), see `State`.
            unsafe { (job.run)(job.ctx, i) };
        }
        p.busy.fetch_sub(1, Ordering::AcqRel);
        let mut st = p.state.lock().unwrap_or_else(|e| e.into_inner());
        st.active -= 1;
        if st.active == 0 && st.caller_waits {
            p.left.notify_all();
        }
    }
}

unsafe fn trampoline<F: Fn(usize) + Sync>(ctx: *const (), i: usize) {
    // SAFETY: `ctx` is the `&F` posted by `run`, alive for the job.
    unsafe { (*(ctx as *const F))(i) }
}

/// Run `f(0)`, …, `f(chunks - 1)` (in any order, each exactly once) on up
/// to `threads` threads, the calling one included; returns when all have
/// finished. `f` must not panic (kernel chunks are native calls): a panic
/// on the calling thread waits for the workers before it unwinds, but one
/// on a worker would leave the caller waiting.
pub fn run<F: Fn(usize) + Sync>(threads: usize, chunks: usize, f: F) {
    let threads = threads.min(chunks).min(MAX_THREADS);
    let serial = |f: &F| (0..chunks).for_each(f);
    if threads <= 1 {
        return serial(&f);
    }
    let p = pool();
    let Ok(_owner) = p.owner.try_lock() else {
        return serial(&f);
    };
    let wake = {
        let mut st = p.state.lock().unwrap_or_else(|e| e.into_inner());
        while st.workers < threads - 1 {
            let spawned = std::thread::Builder::new()
                .name("einsat-jit".into())
                .spawn(move || worker(p));
            if spawned.is_err() {
                break;
            }
            st.workers += 1;
        }
        // wait for new workers to be up, so that their start-up is not
        // part of this call's work
        while st.started < st.workers {
            st.caller_waits = true;
            st = p.left.wait(st).unwrap_or_else(|e| e.into_inner());
            st.caller_waits = false;
        }
        p.next.store(0, Ordering::Release);
        st.job = Some(Job {
            run: trampoline::<F>,
            ctx: &f as *const F as *const (),
            chunks,
        });
        st.generation += 1;
        p.generation.store(st.generation, Ordering::Release);
        st.wanted = (threads - 1).min(st.workers);
        st.sleeping > 0
    };
    POSTED.fetch_add(1, Ordering::Relaxed);
    if wake {
        p.post.notify_all();
    }
    // withdraws the job and waits for the workers in it, also should `f`
    // panic here: nothing may refer to `f` once this frame is gone
    let _withdraw = Withdraw(p);
    loop {
        let i = p.next.fetch_add(1, Ordering::AcqRel);
        if i >= chunks {
            break;
        }
        f(i);
    }
}

struct Withdraw(&'static Pool);

impl Drop for Withdraw {
    fn drop(&mut self) {
        let p = self.0;
        // no chunk is left for a worker to start
        p.next.store(usize::MAX / 2, Ordering::Release);
        // (a worker joining from here on finds no chunk; `busy` counts it
        // while it looks)
        spin_until(1, || p.busy.load(Ordering::Acquire) == 0);
        let mut st = p.state.lock().unwrap_or_else(|e| e.into_inner());
        st.wanted = 0;
        while st.active > 0 {
            st.caller_waits = true;
            st = p.left.wait(st).unwrap_or_else(|e| e.into_inner());
            st.caller_waits = false;
        }
        st.job = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn every_chunk_runs_once() {
        for threads in [1, 2, 3, 8] {
            for chunks in [0, 1, 2, 5, 64] {
                let hits: Vec<AtomicU64> = (0..chunks).map(|_| AtomicU64::new(0)).collect();
                run(threads, chunks, |i| {
                    hits[i].fetch_add(1, Ordering::Relaxed);
                });
                assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
            }
        }
    }

    #[test]
    fn concurrent_callers_and_nested_jobs() {
        let total = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..50 {
                        run(3, 6, |_| {
                            run(2, 3, |_| {
                                total.fetch_add(1, Ordering::Relaxed);
                            })
                        });
                    }
                });
            }
        });
        assert_eq!(total.load(Ordering::Relaxed), 4 * 50 * 6 * 3);
    }
}
