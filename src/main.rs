//! The `einsat` binary: a thin wrapper over [`einsat::cli`], run on a thread
//! with a large stack so that deep (but accepted) programs never overflow it.

fn main() {
    let code = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(einsat::cli::main)
        .expect("spawning the main thread")
        .join()
        .unwrap_or(101);
    std::process::exit(code);
}
