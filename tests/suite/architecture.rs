//! The shape of `src/` that ARCHITECTURE.md promises, checked: data flows
//! one way (no circle of module dependencies anywhere in `src/`), and every
//! module says what it owns (a `//!` comment opening each file).
//!
//! Dependencies are read from the text: a path `crate::a::b…`,
//! `super::…` or `self::…`, and in a module `m` a path `c::…` where `m::c`
//! is a module, make `m` depend on the longest module the path names.
//! Re-exports (`pub use`, the facades' job), comments and `#[cfg(test)]`
//! items (unit tests may use the public API) do not count. The scan reads
//! files, not inline modules: inside an inline `mod m { … }`, write
//! `crate::` paths (its `super` would be read as the file's parent).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every module of `src/` (by path from the crate root) and its file.
fn modules() -> BTreeMap<Module, PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut fs = Vec::new();
    files(&src, &mut fs);
    fs.into_iter()
        .filter(|p| !p.ends_with("main.rs") && !p.ends_with("tests.rs"))
        .map(|p| {
            let rel = p.strip_prefix(&src).unwrap().with_extension("");
            let mut m: Module = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(m.last().map(String::as_str), Some("mod" | "lib")) {
                m.pop();
            }
            (m, p)
        })
        .collect()
}

/// The text without comments, re-export items and test-only items
/// (`#[cfg(test)]`: unit tests may use the crate's public API).
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut in_reexport = false;
    let mut test_item: Option<usize> = None; // indent of a `#[cfg(test)]` item
    let mut skip_to: Option<String> = None; // the closing line of one
    for line in text.lines() {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        if let Some(close) = &skip_to {
            if line.trim_end() == close {
                skip_to = None;
            }
            continue;
        }
        if let Some(k) = test_item {
            if t.starts_with("#[") || t.starts_with("///") {
                continue;
            }
            test_item = None;
            if !t.trim_end().ends_with(';') {
                skip_to = Some(format!("{}}}", " ".repeat(k)));
            }
            continue;
        }
        if t.starts_with("#[cfg(test)]") {
            test_item = Some(indent);
            continue;
        }
        if in_reexport || t.starts_with("pub use ") || t.starts_with("pub(crate) use ") {
            in_reexport = !t.contains(';');
            continue;
        }
        let line = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The `::`-separated paths of `code` (with `{a, b}` groups expanded one
/// level), each as its segments.
fn paths(code: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !is_ident(chars[i]) || (i > 0 && (is_ident(chars[i - 1]) || chars[i - 1] == ':')) {
            i += 1;
            continue;
        }
        let mut segs = Vec::new();
        let mut j = i;
        loop {
            let s = j;
            while j < chars.len() && is_ident(chars[j]) {
                j += 1;
            }
            segs.push(chars[s..j].iter().collect::<String>());
            if chars.get(j) == Some(&':') && chars.get(j + 1) == Some(&':') {
                j += 2;
                if chars.get(j) == Some(&'{') {
                    let end = chars[j..].iter().position(|&c| c == '}').map(|k| j + k);
                    let inner: String = chars[j + 1..end.unwrap_or(j + 1)].iter().collect();
                    for item in inner.split(',') {
                        let first = item.trim().split("::").next().unwrap_or("").trim();
                        if first.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
                            let mut p = segs.clone();
                            p.push(first.to_string());
                            out.push(p);
                        }
                    }
                    j = end.unwrap_or(j);
                    break;
                }
                if !chars.get(j).is_some_and(|&c| is_ident(c)) {
                    break;
                }
            } else {
                break;
            }
        }
        if segs.len() > 1 {
            out.push(segs);
        }
        i = j.max(i + 1);
    }
    out
}

/// The module a path used in `from` names (the longest existing prefix).
fn target(from: &Module, path: &[String], mods: &BTreeMap<Module, PathBuf>) -> Option<Module> {
    let (mut base, rest): (Module, &[String]) = match path[0].as_str() {
        "crate" => (vec![], &path[1..]),
        "self" => (from.clone(), &path[1..]),
        "super" => {
            let mut b = from.clone();
            let mut k = 0;
            while path.get(k).is_some_and(|s| s == "super") {
                b.pop();
                k += 1;
            }
            (b, &path[k..])
        }
        _ => {
            // a child module named without `self::`
            let mut c = from.clone();
            c.push(path[0].clone());
            if !mods.contains_key(&c) {
                return None;
            }
            (c, &path[1..])
        }
    };
    let mut best = mods.contains_key(&base).then(|| base.clone());
    for s in rest {
        base.push(s.clone());
        if mods.contains_key(&base) {
            best = Some(base.clone());
        }
    }
    best.filter(|b| b != from)
}

fn graph() -> BTreeMap<Module, BTreeSet<Module>> {
    let mods = modules();
    let mut g = BTreeMap::new();
    for (m, file) in &mods {
        let text = code(&std::fs::read_to_string(file).unwrap());
        let deps: BTreeSet<Module> = paths(&text)
            .iter()
            .filter_map(|p| target(m, p, &mods))
            .collect();
        g.insert(m.clone(), deps);
    }
    g
}

fn name(m: &Module) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

/// Strongly connected components of more than one module (Tarjan).
fn circles(g: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct T<'a> {
        g: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on: BTreeSet<&'a Module>,
        out: Vec<Vec<Module>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a Module) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        for w in &t.g[v] {
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn no_circle_of_module_dependencies() {
    let g = graph();
    let found: Vec<String> = circles(&g)
        .iter()
        .map(|c| {
            let members: BTreeSet<&Module> = c.iter().collect();
            let edges: Vec<String> = c
                .iter()
                .flat_map(|a| {
                    g[a].iter()
                        .filter(|b| members.contains(b))
                        .map(move |b| format!("{} -> {}", name(a), name(b)))
                })
                .collect();
            edges.join(", ")
        })
        .collect();
    assert!(
        found.is_empty(),
        "module dependency circles:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_sees_dependencies() {
    // the checker itself: it finds the edges it must (so an empty result
    // above is not a blind scan)
    let g = graph();
    let has = |a: &str, b: &str| {
        let a: Module = a.split("::").map(String::from).collect();
        let b: Module = b.split("::").map(String::from).collect();
        g.get(&a).is_some_and(|d| d.contains(&b))
    };
    assert!(has("opt", "egraph"), "opt uses the e-graph");
    assert!(has("egraph::load", "egraph::check"));
    assert!(has("egraph::load", "egraph::rules"));
    assert!(has("cli::optcmd", "cli::common"));
    assert!(!has("egraph::rules", "egraph::check"));
    let mut cyc = BTreeMap::new();
    let (a, b): (Module, Module) = (vec!["a".into()], vec!["b".into()]);
    cyc.insert(a.clone(), BTreeSet::from([b.clone()]));
    cyc.insert(b.clone(), BTreeSet::from([a.clone()]));
    assert_eq!(circles(&cyc), vec![vec![a, b]]);
}

#[test]
fn every_module_says_what_it_owns() {
    let missing: Vec<String> = modules()
        .into_iter()
        .filter(|(_, p)| {
            let text = std::fs::read_to_string(p).unwrap();
            !text.trim_start().starts_with("//!")
        })
        .map(|(m, p)| format!("{} ({})", name(&m), p.display()))
        .collect();
    assert!(
        missing.is_empty(),
        "modules without a `//!` doc comment: {missing:?}"
    );
}
