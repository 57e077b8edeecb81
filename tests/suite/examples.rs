//! The repository stands on its own: every example program of its
//! `examples/` type-checks and runs in the interpreter (the four programs of
//! the language reference, `notebook.tl`, `diderot.tl`, `loops.tl` and
//! `records.tl`, and the rest of `examples/*.tl`), the commands README.md
//! and `docs/*.md` show print what they show, and no file of the repository
//! refers to a folder beside it.
#![cfg(feature = "cli")] // runs the `einsat` binary

use crate::common;

use einsat::testing::random_inputs;
use einsat::{interp, load};
use rand::SeedableRng;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn tl_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "tl"))
        .collect();
    v.sort();
    v
}

/// The example programs the language reference is about.
const REFERENCE_EXAMPLES: [&str; 4] = ["notebook.tl", "diderot.tl", "loops.tl", "records.tl"];

/// Type-checks `files` and runs every function of them in the interpreter
/// on random inputs (every size 5); returns the number of functions.
fn check_files(files: &[std::path::PathBuf]) -> usize {
    let mut count = 0;
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for file in files {
        let src = std::fs::read_to_string(file).unwrap();
        let prog = load(&src).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for f in &prog.functions {
            let sizes: BTreeMap<String, usize> =
                f.size_names().into_iter().map(|n| (n, 5)).collect();
            let args = random_inputs(f, &sizes, &mut rng).unwrap();
            interp::run(f, &args).unwrap_or_else(|e| panic!("{}: {}: {e}", file.display(), f.name));
            count += 1;
        }
    }
    count
}

#[test]
fn reference_examples_check_and_run() {
    let dir = root().join("examples");
    let reference: Vec<_> = REFERENCE_EXAMPLES.iter().map(|f| dir.join(f)).collect();
    for f in &reference {
        assert!(f.is_file(), "{} is missing", f.display());
    }
    assert!(check_files(&reference) >= 20);
    // and every other example program of the repository
    assert!(check_files(&tl_files(&dir)) >= 20);
    // the examples by field: each function with a comment of what the
    // optimiser does, all five fields
    let fields = tl_files(&dir.join("fields"));
    let names: Vec<_> = fields
        .iter()
        .map(|f| f.file_stem().unwrap().to_string_lossy().to_string())
        .collect();
    assert_eq!(names, ["geometry", "imaging", "linalg", "ml", "physics"]);
    assert!(check_files(&fields) >= 20);
    for f in &fields {
        let src = std::fs::read_to_string(f).unwrap();
        let lines: Vec<&str> = src.lines().collect();
        for (k, l) in lines.iter().enumerate() {
            if l.starts_with("fn ") {
                assert!(
                    k > 0 && lines[k - 1].starts_with("# "),
                    "{}: `{l}` has no comment line above it",
                    f.display()
                );
            }
        }
    }
}

/// Splits a shell command line as README writes them: words separated by
/// spaces, `"…"` quoting, `#` starting a comment outside quotes.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quoted = false;
    for ch in line.chars() {
        match ch {
            '"' => {
                quoted = !quoted;
                word.get_or_insert_with(String::new);
            }
            '#' if !quoted && word.is_none() => break,
            c if c.is_whitespace() && !quoted => words.extend(word.take()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    assert!(!quoted, "unbalanced quotes in `{line}`");
    words.extend(word);
    words
}

/// The `$ cargo run --release -- ARGS` commands of the ```` ```console ````
/// blocks of a Markdown file that show their output, with that output (a
/// line `...` stands for the rest of it).
fn shown_commands(md: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let mut out: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    let mut in_console = false;
    let mut current: Option<(Vec<String>, Vec<String>)> = None;
    for line in md.lines() {
        if !in_console {
            in_console = line.trim_start() == "```console";
            continue;
        }
        let is_end = line.trim_start().starts_with("```");
        if is_end || line.starts_with("$ ") {
            out.extend(current.take().filter(|(_, shown)| !shown.is_empty()));
        }
        if is_end {
            in_console = false;
        } else if let Some(cmd) = line.strip_prefix("$ ") {
            let words = shell_words(cmd);
            current = words
                .strip_prefix(&["cargo", "run", "--release", "--"].map(String::from))
                .map(|args| (args.to_vec(), Vec::new()));
        } else if let Some((_, shown)) = current.as_mut() {
            shown.push(line.trim_end().to_string());
        }
    }
    out
}

#[test]
fn commands_shown_in_the_docs_print_what_they_show() {
    let mut files = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut checked = 0;
    for file in &files {
        let md = std::fs::read_to_string(file).unwrap();
        for (args, shown) in shown_commands(&md) {
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            let (code, stdout, stderr) = common::einsat_in(root(), &argv);
            let what = format!("{}: einsat {}", file.display(), args.join(" "));
            assert_eq!(code, 0, "{what}: {stderr}");
            let printed: Vec<&str> = stdout.lines().map(str::trim_end).collect();
            let upto = shown.iter().position(|l| l == "...");
            let shown = &shown[..upto.unwrap_or(shown.len())];
            if upto.is_some() {
                assert!(printed.len() >= shown.len(), "{what} printed\n{stdout}");
                assert_eq!(&printed[..shown.len()], shown, "{what}");
            } else {
                assert_eq!(printed, shown, "{what}");
            }
            checked += 1;
        }
    }
    // README's "30 seconds" (check, run, einsum) and docs/language.md's runs
    assert!(checked >= 5, "only {checked} commands with output found");
}

/// Folders holding build output or caches, not files the project wrote.
const SKIPPED_DIRS: [&str; 6] = [
    "target",
    ".git",
    "__pycache__",
    "corpus",
    "artifacts",
    ".venv",
];

/// Extensions of the text files searched (files without one, such as
/// `.ci/run` and `fuzz/run`, are searched too).
const TEXT_EXTENSIONS: [&str; 11] = [
    "rs", "md", "toml", "tl", "rules", "py", "sh", "txt", "yml", "yaml", "cfg",
];

/// Every text file under `dir`, outside [`SKIPPED_DIRS`], in name order.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().unwrap_or_default();
        if p.is_dir() {
            if !SKIPPED_DIRS.iter().any(|d| name == *d) {
                walk(&p, out);
            }
        } else if p
            .extension()
            .is_none_or(|e| TEXT_EXTENSIONS.iter().any(|x| e == *x))
        {
            out.push(p);
        }
    }
}

#[test]
fn nothing_refers_to_a_folder_beside_the_repository() {
    // spelt in two pieces so that this file does not match itself
    let needles = [concat!("..", "/shared"), concat!("/work", "/shared")];
    let mut files = Vec::new();
    walk(root(), &mut files);
    assert!(files.len() > 50, "only {} files searched", files.len());
    let mut found = Vec::new();
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for (k, line) in text.lines().enumerate() {
            if needles.iter().any(|n| line.contains(n)) {
                found.push(format!("{}:{}: {line}", f.display(), k + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "files refer outside the repository:\n{}",
        found.join("\n")
    );
}
