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
//! **Placement** (Linux). A worker that finds itself on the CPU its
//! caller ran on when it last took a chunk restricts itself to the other
//! CPUs the process may use (the kernel moves it at once); the caller
//! records its CPU (`sched_getcpu`, no system call) at every chunk it
//! takes, the worker compares at every chunk it takes. Without it, once
//! the process had been idle, the scheduler kept the two on one CPU with
//! the other idle, and a two-thread call ran at one thread's speed or
//! worse: each call wakes the worker, and its end wakes the caller, and
//! the wake-ups kept the partners together (an MLP layer at 2 threads,
//! 256×512·512×512 on a 2-core Zen 4: 1.4 ms per call before the first
//! pause of 0.2–0.3 s between rounds of calls, 2.4–2.9 ms after it, the
//! one-thread time 2.5–3.3 ms; with placement 1.3–1.9 ms in 38 rounds of
//! 40: `benches/README.md`, "The pool's threads on the CPUs").
//!
//! **Spinning** (off by default). A worker that finishes a job can spin
//! for up to [`WORKER_SPIN`] watching for the next one before it sleeps on
//! the condition variable, and the caller, once its own chunks are done,
//! for up to [`CALLER_SPIN`] waiting for the workers to leave before it
//! sleeps, yielding its CPU between looks ([`set_spin`] changes both,
//! process-wide: the pool is shared by every kernel). Both are zero:
//! spinning lost in every measurement on a loaded machine, and with
//! placement it no longer helps on a quiet one (`benches/README.md`,
//! "The pool's spinning").
//! A poster makes the wake-up system call only when some worker is asleep,
//! and a worker only when the caller is.
//!
//! The pool runs one job at a time: a call that finds it busy (another
//! thread's kernel call, or a kernel called from inside a job) runs its
//! chunks itself, on its own thread — never a deadlock, never an
//! oversubscribed machine.
//!
//! Owns the worker threads only; it knows nothing of kernels or nests.

use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};
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
/// once, as the pool does by default): a knob for
/// `examples/thread_sweep.rs`, which compares both in one process; not part
/// of the stable API.
#[doc(hidden)]
pub fn set_spin(worker: Duration, caller: Duration) {
    SPIN_NS[0].store(worker.as_nanos() as u64, Ordering::Relaxed);
    SPIN_NS[1].store(caller.as_nanos() as u64, Ordering::Relaxed);
}

/// Spin (with [`std::hint::spin_loop`], yielding the CPU between rounds
/// of looks) until `done()` or the limit `SPIN_NS[which]` has passed;
/// whether `done()` became true.
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
        // (a thread sharing this CPU runs meanwhile)
        std::thread::yield_now();
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
    /// The CPU the poster of the current job ran on when it last took a
    /// chunk (-1: unknown), which a worker that finds itself there leaves
    /// (`place`).
    caller_cpu: AtomicI32,
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
        caller_cpu: AtomicI32::new(-1),
    })
}

/// Keeping a worker off its caller's CPU (module doc, "Placement"):
/// Linux only; elsewhere nothing is done.
mod place {
    /// The CPUs this thread may run on (as spawned: the process's).
    #[cfg(target_os = "linux")]
    pub(super) struct Allowed(pub(super) Option<libc::cpu_set_t>);
    #[cfg(not(target_os = "linux"))]
    pub(super) struct Allowed;

    impl Allowed {
        #[cfg(target_os = "linux")]
        pub(super) fn of_this_thread() -> Allowed {
            Allowed(affinity())
        }
        #[cfg(not(target_os = "linux"))]
        pub(super) fn of_this_thread() -> Allowed {
            Allowed
        }

        /// If this thread runs on `cpu` (the caller's), restrict it to the
        /// others it was allowed when it started (when there are any): the
        /// kernel moves it at once. A `cpu` beyond the set's size is no
        /// CPU this thread runs on.
        #[cfg(target_os = "linux")]
        pub(super) fn leave(&self, cpu: i32) {
            let Some(all) = &self.0 else { return };
            // SAFETY: `sched_getcpu` has no preconditions.
            if cpu < 0 || unsafe { libc::sched_getcpu() } != cpu {
                return;
            }
            let mut s = *all;
            // SAFETY: `cpu` is the CPU this thread runs on, below
            // `CPU_SETSIZE`; the set is ours.
            unsafe {
                libc::CPU_CLR(cpu as usize, &mut s);
                if libc::CPU_COUNT(&s) > 0 {
                    libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &s);
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        pub(super) fn leave(&self, _cpu: i32) {}
    }

    /// The CPUs this thread may run on now (`None`: not known).
    #[cfg(target_os = "linux")]
    pub(super) fn affinity() -> Option<libc::cpu_set_t> {
        // SAFETY: a zeroed `cpu_set_t` is a valid empty set, and the call
        // writes at most its size.
        unsafe {
            let mut s: libc::cpu_set_t = std::mem::zeroed();
            let ok = libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut s);
            (ok == 0).then_some(s)
        }
    }

    /// The CPU this thread runs on (-1: unknown).
    pub(super) fn current() -> i32 {
        #[cfg(target_os = "linux")]
        // SAFETY: `sched_getcpu` has no preconditions.
        return unsafe { libc::sched_getcpu() };
        #[cfg(not(target_os = "linux"))]
        return -1;
    }
}

fn worker(p: &'static Pool) {
    let allowed = place::Allowed::of_this_thread();
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
            allowed.leave(p.caller_cpu.load(Ordering::Relaxed));
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
        p.caller_cpu.store(place::current(), Ordering::Relaxed);
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
        p.caller_cpu.store(place::current(), Ordering::Relaxed);
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

    /// A thread that leaves its CPU runs elsewhere at once (where it may
    /// run elsewhere), and leaving another CPU changes nothing.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_worker_leaves_its_callers_cpu() {
        std::thread::spawn(|| {
            let allowed = place::Allowed::of_this_thread();
            let Some(all) = &allowed.0 else { return };
            // SAFETY: reads the set.
            if unsafe { libc::CPU_COUNT(all) } < 2 {
                return;
            }
            let here = place::current();
            assert!(here >= 0);
            allowed.leave(here + 1_000);
            // SAFETY: compares two sets.
            assert!(unsafe { libc::CPU_EQUAL(&place::affinity().unwrap(), all) });
            allowed.leave(here);
            assert_ne!(place::current(), here);
            let mut without = *all;
            // SAFETY: `here` is a CPU number below `CPU_SETSIZE`.
            unsafe { libc::CPU_CLR(here as usize, &mut without) };
            // SAFETY: compares two sets.
            assert!(unsafe { libc::CPU_EQUAL(&place::affinity().unwrap(), &without) });
        })
        .join()
        .unwrap();
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
