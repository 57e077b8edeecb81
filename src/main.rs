//! The `einsat` binary: a thin wrapper over [`einsat::cli`].

fn main() {
    std::process::exit(einsat::cli::main());
}
