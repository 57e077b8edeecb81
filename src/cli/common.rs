//! What the commands share: the failure type (`CliResult`), writing to
//! stdout (behind the `out!`/`outln!` macros of [`super`]), reading and
//! loading a source file with rendered errors, picking a function, parsing
//! `--size` flags and thread counts, and the `Spinner`. Depends on no
//! command module; every command module may use it.

use crate::error::Error;
use crate::syntax;
use crate::types;
use std::collections::BTreeMap;
use std::path::Path;

/// A CLI failure: the fully rendered message.
pub(crate) type CliResult = std::result::Result<(), String>;

/// A sign of life for work that may take a while: a spinner with `msg` on
/// stderr, ticking on its own thread, when stderr is a terminal (none when
/// it is piped or redirected, so logs and captured output stay clean).
/// Dropping it clears it.
pub(crate) struct Spinner(Option<indicatif::ProgressBar>);

impl Spinner {
    pub(crate) fn new(msg: impl Into<String>) -> Spinner {
        use std::io::IsTerminal;
        if !std::io::stderr().is_terminal() {
            return Spinner(None);
        }
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_message(msg.into());
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        Spinner(Some(bar))
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(b) = self.0.take() {
            b.finish_and_clear();
        }
    }
}

/// Write to stdout (what `out!` and `outln!` expand to); a failed
/// write is the command's error.
pub(crate) fn write_stdout(args: std::fmt::Arguments<'_>) -> CliResult {
    use std::io::Write;
    std::io::stdout()
        .lock()
        .write_fmt(args)
        .map_err(stdout_error)
}

pub(crate) fn stdout_error(e: std::io::Error) -> String {
    format!("error: writing to stdout: {e}")
}

pub(crate) fn read_source(file: &Path) -> std::result::Result<String, String> {
    let bytes = std::fs::read(file)
        .map_err(|e| format!("error: {}: {e}", crate::diag::quote_path(file)))?;
    crate::diag::decode_source(&file.display().to_string(), bytes)
}

pub(crate) fn render(e: Error, file: &Path, src: &str) -> String {
    match e.with_source(&file.display().to_string(), src) {
        // (rendered: `file:line:col: error: …` and the caret line)
        e @ (Error::Parse(_) | Error::Type(_)) => e.to_string(),
        other => format!("error: {other}"),
    }
}

/// Parse and check a file, rendering errors against the source.
pub(crate) fn load_file(file: &Path) -> std::result::Result<(String, syntax::Parsed), String> {
    let src = read_source(file)?;
    let parsed = types::parse_and_check(&src).map_err(|e| render(e, file, &src))?;
    Ok((src, parsed))
}

pub(crate) fn pick<'a>(
    prog: &'a syntax::Program,
    name: Option<&str>,
) -> std::result::Result<&'a syntax::Function, String> {
    match name {
        Some(n) => prog.get(n).ok_or_else(|| {
            format!(
                "error: no function `{}` (the file defines: {})",
                crate::diag::quote(n),
                names(prog)
            )
        }),
        None if prog.functions.len() == 1 => Ok(&prog.functions[0]),
        None => Err(format!(
            "error: the file defines several functions; choose one with --fn ({})",
            names(prog)
        )),
    }
}

pub(crate) fn names(p: &syntax::Program) -> String {
    let names: Vec<String> = p.functions.iter().map(|f| f.name.clone()).collect();
    crate::diag::quote_list(&names)
}

/// Parse `--size NAME=INTEGER` flags for the functions `fs` (of `place`,
/// e.g. "the file", for the error): a name, a whole number, each name
/// once, and only names some function of `fs` has (the error lists the
/// names they have).
pub(crate) fn parse_sizes(
    specs: &[String],
    fs: &[&syntax::Function],
    place: &str,
) -> std::result::Result<BTreeMap<String, usize>, String> {
    let mut out = BTreeMap::new();
    for s in specs {
        let shown = crate::diag::quote(s);
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| format!("error: `--size {shown}`: expected NAME=INTEGER"))?;
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() {
            return Err(format!(
                "error: `--size {shown}`: the size name is missing (expected NAME=INTEGER)"
            ));
        }
        let n: usize = v.parse().map_err(|_| {
            format!(
                "error: `--size {shown}`: `{}` is not a size (a whole number ≥ 0)",
                crate::diag::quote(v)
            )
        })?;
        if let Some(old) = out.insert(k.to_string(), n) {
            if old != n {
                return Err(format!(
                    "error: `--size {shown}`: size `{}` is given twice ({old} and {n})",
                    crate::diag::quote(k)
                ));
            }
        }
    }
    let mut have: Vec<String> = Vec::new();
    for f in fs {
        for n in f.size_names() {
            if !have.contains(&n) {
                have.push(n);
            }
        }
    }
    have.sort();
    if let Some((k, v)) = out.iter().find(|(k, _)| !have.contains(k)) {
        let k = crate::diag::quote(k);
        let sizes = if have.is_empty() {
            "no named sizes".to_string()
        } else {
            format!("sizes {}", crate::diag::quote_list(&have))
        };
        let msg = match fs {
            [f] => format!(
                "`{}` has no size `{k}` (it has {sizes})",
                crate::diag::quote(&f.name)
            ),
            _ => format!("no function of {place} has a size `{k}` (they have {sizes})"),
        };
        return Err(format!("error: `--size {k}={v}`: {msg}"));
    }
    Ok(out)
}

/// Check a thread-count flag (`--threads`, `--jit-threads`, `--jobs`)
/// against [`crate::jit::MAX_THREADS`], the limit Python and the Rust API
/// share.
pub(crate) fn threads_flag(flag: &str, n: usize) -> std::result::Result<usize, String> {
    let max = crate::jit::MAX_THREADS;
    if n > max {
        return Err(format!("error: {flag} {n}: at most {max} threads"));
    }
    Ok(n)
}
