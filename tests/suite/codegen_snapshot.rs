//! The generated machine code does not change unnoticed: for every program
//! of `examples/` (`*.tl`, subfolders included), of `benches/perf.tl` and a
//! few tensor networks of `plan::networks`, as written and as optimised,
//! the Cranelift IR of every function the JIT compiles (contiguous and
//! generic layouts) and the kernel's stages are hashed, with the GEMM stage
//! on and off, and compared with `tests/data/codegen.snap`.
//!
//! The optimised programs are stored in the snapshot (the optimiser runs
//! under a time limit, so its output is not re-derived here): the test
//! checks the back end alone. A deliberate change of the generated code is
//! recorded with `EINSAT_BLESS=1 cargo test --release --test
//! codegen_snapshot`, which optimises every program again and rewrites the
//! file; its diff shows which programs' code changed. After a change of the
//! back end alone, `EINSAT_BLESS=code` keeps the stored optimised programs
//! (optimising only programs new to the snapshot) and rewrites the hashes,
//! so the diff shows the code changes without the optimiser's.

use einsat::jit::testing::clif_text;
use einsat::jit::Options;
use einsat::plan::networks;
use einsat::{load, Function};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const SNAPSHOT: &str = "tests/data/codegen.snap";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn tl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            tl_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "tl") {
            out.push(p);
        }
    }
}

/// Every program of the snapshot, by key (`file:function` or `net:name`),
/// as written.
fn programs() -> BTreeMap<String, Function> {
    let mut files = Vec::new();
    tl_files(&root().join("examples"), &mut files);
    files.push(root().join("benches/perf.tl"));
    let mut out = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(root()).unwrap().display().to_string();
        let src = std::fs::read_to_string(&file).unwrap();
        let prog = load(&src).unwrap_or_else(|e| panic!("{rel}: {e}"));
        for f in prog.functions {
            out.insert(format!("{rel}:{}", f.name), f);
        }
    }
    let nets = [
        ("ring6", networks::ring(6, 4)),
        ("mps4", networks::mps_norm(4, 4, 2)),
        ("grid3x3", networks::grid(3, 3, 3)),
        ("einsum6", networks::random_einsum(6, 1)),
        ("regular8", networks::random_regular(8, 3, 3, 2)),
    ];
    for (name, net) in nets {
        let f = load(&networks::program_text(&net))
            .unwrap()
            .functions
            .remove(0);
        out.insert(format!("net:{name}"), f);
    }
    out
}

/// FNV-1a, 64 bits: stable across builds and platforms.
fn fnv(parts: &[String]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([0xff]) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// The hashes of `f`'s generated code with the GEMM stage on and off
/// (an error's text is hashed in place of code).
fn hashes(f: &Function) -> String {
    [true, false]
        .iter()
        .map(|&gemm| {
            let opts = Options {
                gemm,
                ..Options::default()
            };
            let text = clif_text(f, &opts).unwrap_or_else(|e| vec![format!("error: {e}")]);
            assert!(
                text.iter()
                    .any(|t| t.starts_with("function ") || t.starts_with("error")),
                "{}: no Cranelift IR captured",
                f.name
            );
            format!("{:016x}", fnv(&text))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

struct Entry {
    written: String,
    optimised_hash: String,
    optimised: Function,
}

/// The snapshot file: after its leading `//` comment, per program a
/// header line `# <key> <written hashes> | <optimised hashes>`, then the
/// optimised program's text.
fn parse(text: &str) -> BTreeMap<String, Entry> {
    let mut out = BTreeMap::new();
    let mut entries: Vec<(&str, String)> = Vec::new();
    for line in text.lines().skip_while(|l| l.starts_with("//")) {
        match line.strip_prefix("# ") {
            Some(head) => entries.push((head, String::new())),
            None => {
                let (_, body) = entries.last_mut().expect("an entry's header first");
                body.push_str(line);
                body.push('\n');
            }
        }
    }
    for (head, body) in entries {
        let (key, rest) = head.split_once(' ').expect("header: key and hashes");
        let (w, o) = rest.split_once(" | ").expect("header: written | optimised");
        let optimised = load(&body)
            .unwrap_or_else(|e| panic!("{SNAPSHOT}: {key}: {e}"))
            .functions
            .remove(0);
        out.insert(
            key.to_string(),
            Entry {
                written: w.to_string(),
                optimised_hash: o.to_string(),
                optimised,
            },
        );
    }
    out
}

/// Rewrite the snapshot; with `keep`, the optimised programs it stores
/// stay (only the hashes are recomputed).
fn bless(progs: &BTreeMap<String, Function>, keep: Option<&BTreeMap<String, Entry>>) {
    let mut out = String::from(
        "// Generated by `EINSAT_BLESS=1 cargo test --release --test codegen_snapshot`:\n\
         // per program `# key <hashes as written> | <hashes optimised>` (GEMM on, off),\n\
         // then the optimised program. See tests/suite/codegen_snapshot.rs.\n",
    );
    for (key, f) in progs {
        let o = match keep.and_then(|k| k.get(key)) {
            Some(e) => e.optimised.clone(),
            None => einsat::opt::optimize(f, &einsat::opt::Options::default())
                .map(|o| o.program)
                .unwrap_or_else(|_| f.clone()),
        };
        writeln!(out, "# {key} {} | {}", hashes(f), hashes(&o)).unwrap();
        writeln!(out, "{o}").unwrap();
    }
    std::fs::create_dir_all(root().join("tests/data")).unwrap();
    std::fs::write(root().join(SNAPSHOT), out).unwrap();
}

#[test]
fn generated_code_matches_snapshot() {
    let progs = programs();
    match std::env::var("EINSAT_BLESS").as_deref() {
        Ok("code") => {
            let text = std::fs::read_to_string(root().join(SNAPSHOT)).unwrap_or_default();
            bless(&progs, Some(&parse(&text.replace("\r\n", "\n"))));
        }
        Ok(v) if v != "0" => bless(&progs, None),
        _ => {}
    }
    let text = std::fs::read_to_string(root().join(SNAPSHOT))
        .unwrap_or_else(|e| panic!("{SNAPSHOT}: {e}; create it with EINSAT_BLESS=1"));
    let snap = parse(&text.replace("\r\n", "\n"));
    let mut diffs = Vec::new();
    for key in progs.keys().filter(|k| !snap.contains_key(*k)) {
        diffs.push(format!("{key}: not in the snapshot"));
    }
    for key in snap.keys().filter(|k| !progs.contains_key(*k)) {
        diffs.push(format!("{key}: in the snapshot, no longer a program"));
    }
    for (key, e) in &snap {
        let Some(f) = progs.get(key) else { continue };
        let w = hashes(f);
        if w != e.written {
            diffs.push(format!("{key} (as written): {w}, snapshot {}", e.written));
        }
        let o = hashes(&e.optimised);
        if o != e.optimised_hash {
            diffs.push(format!(
                "{key} (optimised): {o}, snapshot {}",
                e.optimised_hash
            ));
        }
    }
    assert!(
        diffs.is_empty(),
        "generated code changed for {} program(s) (if deliberate: EINSAT_BLESS=1):\n{}",
        diffs.len(),
        diffs.join("\n")
    );
    // the snapshot covers something: every example folder is in it
    assert!(snap.len() >= 40, "only {} programs", snap.len());
}
