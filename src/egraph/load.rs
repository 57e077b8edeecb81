//! Rule files loaded and checked: the one door through which rules from
//! outside the binary enter the optimiser. Parsing is [`super::rules`]'s,
//! the soundness check [`super::check`]'s; this module joins them and
//! depends on both (neither depends on it).
//!
//! [`parse_rules`] and [`load_rules_dir`] check every rule they load for
//! soundness before returning it: each rule is instantiated with random
//! well-typed terms and inputs and both sides are run in the interpreter,
//! as `einsat rules check` does ([`RuleCheck`] says how many instances and
//! the time budget), and an unsound rule is refused with its counterexample
//! ([`Error::UnsoundRule`]). A rule identical to a built-in one (which CI
//! checks with 1000 instances) is not instantiated again. The `*_with`
//! variants take a [`RuleCheck`]; [`RuleCheck::skip`] (the CLI's
//! `--no-rule-check`) loads without checking.

use super::check::RuleCheck;
use super::rules::{parse_unchecked, Rule};
use crate::error::{Error, Result as EResult};

/// Parse one rules file and check its rules' soundness with the default
/// [`RuleCheck`] (see the module doc). `file` names it in errors
/// (`file:line: message`).
pub fn parse_rules(file: &str, text: &str) -> EResult<Vec<Rule>> {
    parse_rules_with(file, text, &RuleCheck::default())
}

/// [`parse_rules`] with a given soundness check ([`RuleCheck::skip`] for
/// none).
pub fn parse_rules_with(file: &str, text: &str, check: &RuleCheck) -> EResult<Vec<Rule>> {
    let rules = parse_unchecked(file, text)?;
    check.check(&rules)?;
    Ok(rules)
}

/// One rule file, checked for soundness with the default [`RuleCheck`]
/// (as [`load_rules_dir`] checks each file of a folder).
pub fn load_rules_file(path: &std::path::Path) -> EResult<Vec<Rule>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::RuleFile {
        file: path.display().to_string(),
        line: None,
        message: e.to_string(),
    })?;
    parse_rules(&path.display().to_string(), &text)
}

/// Every `*.rules` file of a directory, in name order, checked for
/// soundness with the default [`RuleCheck`] (see the module doc).
pub fn load_rules_dir(dir: &std::path::Path) -> EResult<Vec<Rule>> {
    load_rules_dir_with(dir, &RuleCheck::default())
}

/// [`load_rules_dir`] with a given soundness check ([`RuleCheck::skip`]
/// for none).
pub fn load_rules_dir_with(dir: &std::path::Path, check: &RuleCheck) -> EResult<Vec<Rule>> {
    let io = |p: &std::path::Path, e: std::io::Error| Error::RuleFile {
        file: p.display().to_string(),
        line: None,
        message: e.to_string(),
    };
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rules"))
        .collect();
    files.sort();
    let mut v: Vec<Rule> = Vec::new();
    // where each rule name was first defined: a name in two files is an error
    let mut seen: std::collections::HashMap<String, String> = Default::default();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|e| io(&f, e))?;
        for r in parse_unchecked(&f.display().to_string(), &text)? {
            if let Some(first) = seen.get(&r.name) {
                let (file, line) = r.file_line();
                return Err(Error::RuleFile {
                    file,
                    line,
                    message: format!(
                        "rule `{}` is already defined at {first} (rule names must be unique across files)",
                        r.name
                    ),
                });
            }
            seen.insert(r.name.clone(), r.origin.clone());
            v.push(r);
        }
    }
    check.check(&v)?;
    Ok(v)
}
