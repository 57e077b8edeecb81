//! The `einsat` binary: a thin wrapper over [`einsat::cli`], run on a thread
//! with a large stack so that deep (but accepted) programs never overflow it.
//!
//! A closed stdout (`einsat opt FILE | head -1`) ends the process quietly,
//! as it does for other Unix filters: SIGPIPE is restored to its default
//! action (Rust ignores it, which turns the closed pipe into an error that
//! `println!` reports by panicking).

fn main() {
    #[cfg(unix)]
    // SAFETY: called first thing, before any other thread exists; it only
    // resets the disposition of SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let code = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(einsat::cli::main)
        .expect("spawning the main thread")
        .join()
        .unwrap_or(101);
    std::process::exit(code);
}
