//! The einsum front end: numpy's einsum grammar (`"ij,jk->ik"`, implicit
//! output `"ij,jk"`, repeated indices `"ii->"`, any number of operands) to a
//! function of the language, and *batched* einsum (seed 002): several outputs
//! over shared, named inputs, returned as a tuple.
//!
//! Operand arrays are named `A`, `B`, … (`T26`, `T27`, … past 26); index
//! letter `x` ranges over the size name `nx`. Summed indices are bound in
//! order of first appearance.
//!
//! Index letters are ASCII letters and, as opt_einsum allows (its
//! `get_symbol(i)` for `i ≥ 52`: `À`, `Á`, …, also characters that are not
//! letters such as `×`), any character beyond ASCII that is not whitespace
//! or a control character, so that networks of hundreds of indices can be
//! written. A letter beyond ASCII is written in the program as the
//! identifier `u` + its code point in hex (`×` is index `u00D7` of size
//! `nu00D7`, see [`index_name`]), which no ASCII letter's name can be.
//! ASCII punctuation and digits keep numpy's grammar errors.

use crate::error::{Error, Result};
use crate::syntax::ast::*;

/// A parsed einsum spec: operand subscripts and output subscripts.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// Each operand's index letters, in order.
    pub inputs: Vec<Vec<char>>,
    /// The output's index letters.
    pub output: Vec<char>,
}

fn err(msg: impl Into<String>) -> Error {
    Error::Frontend(format!("einsum: {}", msg.into()))
}

/// An error about the character at byte `at` of `spec`: its column and an
/// excerpt of the spec around it (a long spec is not echoed whole).
fn err_at(spec: &str, at: usize, msg: impl std::fmt::Display) -> Error {
    Error::Frontend(format!("einsum: {msg} ({})", where_in(spec, at)))
}

/// `column C of `…``: the 1-based column of byte `at` of `spec` and an
/// excerpt of the spec around it ([`crate::diag::excerpt`]).
pub fn where_in(spec: &str, at: usize) -> String {
    let at = at.min(spec.len());
    let col = spec[..at].chars().count() + 1;
    format!("column {col} of `{}`", crate::diag::excerpt(spec, at))
}

/// `` `c` `` for a message, control characters escaped.
fn shown(c: char) -> String {
    crate::diag::quote(c.encode_utf8(&mut [0; 4]))
}

/// What numpy's einsum refuses in a spec before reading its grammar, as
/// the byte offset of the first such character and what is wrong: numpy
/// (`numpy.einsum`, its default path) skips spaces between subscripts and
/// nothing else, so a tab, a newline or other whitespace is refused, and
/// so are `->` and `...` split by a space (`- >`, `. ..`): a `-` or `>`
/// must be part of `->`, a `.` part of exactly three. Shared by the Python
/// binding (whose grammar has `...`).
pub fn check_characters(spec: &str) -> std::result::Result<(), (usize, String)> {
    let b = spec.as_bytes();
    for (i, c) in spec.char_indices() {
        match c {
            ' ' => {}
            c if c.is_whitespace() => {
                let name = match c {
                    '\t' => "a tab",
                    '\n' => "a newline",
                    '\r' => "a carriage return",
                    _ => "whitespace",
                };
                return Err((
                    i,
                    format!(
                        "{name} (U+{:04X}) in the spec: numpy's grammar allows only spaces between subscripts",
                        c as u32
                    ),
                ));
            }
            '-' if b.get(i + 1) != Some(&b'>') => {
                return Err((i, "`-` appears only as part of `->`".into()))
            }
            '>' if i == 0 || b[i - 1] != b'-' => {
                return Err((i, "`>` appears only as part of `->`".into()))
            }
            '.' if i == 0 || b[i - 1] != b'.' => {
                let run = b[i..].iter().take_while(|&&x| x == b'.').count();
                if run != 3 {
                    return Err((i, "`.` appears only as part of `...`".into()));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Whether `c` is an index letter: an ASCII letter, or a character beyond
/// ASCII that is not whitespace or a control character (opt_einsum's
/// symbols past the 52 letters).
pub fn is_index_letter(c: char) -> bool {
    c.is_ascii_alphabetic() || (!c.is_ascii() && !c.is_whitespace() && !c.is_control())
}

/// The identifier of index letter `c` in the program: the letter itself
/// when it is ASCII, else `u` and its code point in (at least four) upper
/// hex digits (`×` → `u00D7`).
pub fn index_name(c: char) -> String {
    if c.is_ascii() {
        c.to_string()
    } else {
        format!("u{:04X}", c as u32)
    }
}

/// What index letters are, for error messages.
const LETTERS: &str = "a-z, A-Z, or a character beyond ASCII";

/// Parse a spec in numpy's grammar. Spaces between subscripts are skipped
/// (as numpy does); errors give the column and an excerpt of the spec.
pub fn parse_spec(spec: &str) -> Result<Spec> {
    check_characters(spec).map_err(|(at, m)| err_at(spec, at, m))?;
    if let Some(at) = spec.find('.') {
        return Err(err_at(
            spec,
            at,
            "an ellipsis (`...`) needs the operands' ranks: `einsum_ranked` in Rust, `--ranks` on the command line",
        ));
    }
    let arrow = spec.find("->");
    if let Some(a) = arrow {
        if let Some(k) = spec[a + 2..].find("->") {
            return Err(err_at(spec, a + 2 + k, "`->` appears more than once"));
        }
    }
    let lhs_end = arrow.unwrap_or(spec.len());
    // the letters of each operand, with their byte offsets
    let mut inputs: Vec<Vec<char>> = vec![Vec::new()];
    for (i, c) in spec[..lhs_end].char_indices() {
        match c {
            ' ' => {}
            ',' => inputs.push(Vec::new()),
            c if is_index_letter(c) => inputs.last_mut().expect("one operand").push(c),
            c => {
                return Err(err_at(
                    spec,
                    i,
                    format!("`{}` is not an index letter ({LETTERS})", shown(c)),
                ))
            }
        }
    }
    let output: Vec<char> = match arrow {
        Some(a) => {
            let mut out: Vec<char> = Vec::new();
            for (k, c) in spec[a + 2..].char_indices() {
                let i = a + 2 + k;
                if c == ' ' {
                    continue;
                }
                if c == ',' {
                    return Err(err_at(spec, i, "the output has no `,` (one result)"));
                }
                if !is_index_letter(c) {
                    return Err(err_at(
                        spec,
                        i,
                        format!("`{}` is not an index letter ({LETTERS})", shown(c)),
                    ));
                }
                if out.contains(&c) {
                    return Err(err_at(spec, i, format!("output index `{c}` appears twice")));
                }
                if !inputs.iter().flatten().any(|d| *d == c) {
                    return Err(err_at(
                        spec,
                        i,
                        format!("output index `{c}` does not appear in any operand"),
                    ));
                }
                out.push(c);
            }
            out
        }
        None => {
            // numpy: the indices that appear exactly once, in alphabetical order
            seen_once(inputs.iter().flatten().copied())
        }
    };
    Ok(Spec { inputs, output })
}

/// A spec made explicit for operands of known ranks ([`expand_ellipsis`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Expanded {
    /// The spec in explicit form (`->` and output), with no `...`.
    pub explicit: String,
    /// Each operand's index letters, one per axis.
    pub labels: Vec<Vec<char>>,
}

/// Why a spec cannot be expanded: its grammar ([`SpecError::byte`] gives the
/// byte of the spec it is about, where known), or operands that do not fit
/// it (their number, or their ranks).
#[derive(Clone, Debug, PartialEq)]
pub struct SpecError {
    /// True when the operands do not fit the spec (a shape error for the
    /// caller), false for the spec's own grammar.
    pub operands: bool,
    /// The byte of the spec the error is about, where known.
    pub byte: Option<usize>,
    /// What is wrong (without the `einsum: ` prefix).
    pub message: String,
}

impl SpecError {
    fn at(byte: usize, m: impl Into<String>) -> SpecError {
        SpecError {
            operands: false,
            byte: Some(byte),
            message: m.into(),
        }
    }
    fn grammar(m: impl Into<String>) -> SpecError {
        SpecError {
            operands: false,
            byte: None,
            message: m.into(),
        }
    }
    fn operands(m: impl Into<String>) -> SpecError {
        SpecError {
            operands: true,
            byte: None,
            message: m.into(),
        }
    }

    /// As a crate error: [`Error::Frontend`] with the column and an excerpt
    /// of `spec` where the byte is known.
    pub fn into_error(self, spec: &str) -> Error {
        match self.byte {
            Some(at) => err_at(spec, at, self.message),
            None => err(self.message),
        }
    }
}

/// Expand a numpy spec for operands of the given ranks into explicit form
/// without ellipses ([`Expanded`]): numpy's `...` broadcast axes get
/// letters of their own, an implicit output is made explicit as numpy
/// orders it (the axes under `...` first, then the letters that appear
/// once, in code-point order). Index letters
/// are ASCII letters and characters beyond ASCII (opt_einsum's symbols,
/// see `einsat::frontend::einsum::is_index_letter`); the axes under `...`
/// get unused letters (`A`-`Z`, `a`-`z`, then opt_einsum's symbols from
/// U+00C0).
pub fn expand_ellipsis(spec: &str, ranks: &[usize]) -> std::result::Result<Expanded, SpecError> {
    // numpy's rule: spaces between subscripts, no other whitespace, `->`
    // and `...` not split (as the Rust front end)
    check_characters(spec).map_err(|(at, m)| SpecError::at(at, m))?;
    let s: String = spec.chars().filter(|&c| c != ' ').collect();
    if let Some(c) = s
        .chars()
        .find(|&c| !(is_index_letter(c) || matches!(c, ',' | '.' | '-' | '>')))
    {
        let at = spec.find(c).unwrap_or(0);
        return Err(SpecError::at(
            at,
            format!(
                "`{}` is not an index letter (a-z, A-Z, or a character beyond ASCII)",
                crate::diag::quote(c.encode_utf8(&mut [0; 4]))
            ),
        ));
    }
    let (lhs, rhs) = match s.split_once("->") {
        Some((_, r)) if r.contains("->") => {
            let first = spec.find("->").unwrap_or(0);
            let at = spec[first + 2..].find("->").map_or(0, |k| first + 2 + k);
            return Err(SpecError::at(at, "`->` appears more than once"));
        }
        Some((l, r)) => (l, Some(r)),
        None => (s.as_str(), None),
    };
    if lhs.contains(['-', '>']) || rhs.is_some_and(|r| r.contains(['-', '>', ','])) {
        return Err(SpecError::grammar(
            "`-` and `>` appear only as `->`, and the output has no `,`",
        ));
    }
    let terms: Vec<&str> = lhs.split(',').collect();
    if terms.len() != ranks.len() {
        return Err(SpecError::operands(format!(
            "the spec has {} operand{} but {} {} given",
            terms.len(),
            if terms.len() == 1 { "" } else { "s" },
            ranks.len(),
            if ranks.len() == 1 { "was" } else { "were" }
        )));
    }
    // split a term at its ellipsis: (before, after, has ellipsis)
    let split = |t: &str| -> std::result::Result<(Vec<char>, Vec<char>, bool), SpecError> {
        let q = || crate::diag::quote(t);
        match t.split_once("...") {
            Some((a, b)) if a.contains('.') || b.contains('.') => Err(SpecError::grammar(format!(
                "`{}`: `.` appears only as one `...`",
                q()
            ))),
            Some((a, b)) => Ok((a.chars().collect(), b.chars().collect(), true)),
            None if t.contains('.') => Err(SpecError::grammar(format!(
                "`{}`: `.` appears only as `...`",
                q()
            ))),
            None => Ok((t.chars().collect(), Vec::new(), false)),
        }
    };
    let used: Vec<char> = s.chars().filter(|&c| is_index_letter(c)).collect();
    let mut parts = Vec::new();
    let mut ell = Vec::new();
    for (k, (t, &rank)) in terms.iter().zip(ranks).enumerate() {
        let (a, b, dots) = split(t)?;
        let named = a.len() + b.len();
        if (dots && named > rank) || (!dots && named != rank) {
            return Err(SpecError::operands(format!(
                "operand {k} has {rank} axes but its subscripts `{}` name {named}",
                crate::diag::quote(t)
            )));
        }
        ell.push(if dots { rank - named } else { 0 });
        parts.push((a, b));
    }
    let e = ell.iter().copied().max().unwrap_or(0);
    let fresh: Vec<char> = ('A'..='Z')
        .chain('a'..='z')
        .chain((192u32..55296).filter_map(char::from_u32))
        .filter(|c| !used.contains(c) && is_index_letter(*c))
        .take(e)
        .collect();
    let mut labels = Vec::new();
    for ((a, b), &n) in parts.iter().zip(&ell) {
        let mut l: Vec<char> = a.clone();
        l.extend(&fresh[e - n..]);
        l.extend(b);
        labels.push(l);
    }
    let output: Vec<char> = match rhs {
        Some(r) => {
            let (a, b, dots) = split(r)?;
            if !dots && e > 0 {
                return Err(SpecError::operands(
                    "the operands have axes under `...` but the output has no `...`",
                ));
            }
            let arrow = spec.find("->").map_or(0, |k| k + 2);
            let letters: Vec<char> = a.iter().chain(&b).copied().collect();
            for (k, &c) in letters.iter().enumerate() {
                let nth = |n: usize| {
                    spec[arrow..]
                        .match_indices(c)
                        .nth(n)
                        .map_or(arrow, |(i, _)| arrow + i)
                };
                let shown = crate::diag::quote(c.encode_utf8(&mut [0; 4]));
                if letters[..k].contains(&c) {
                    return Err(SpecError::at(
                        nth(1),
                        format!("output index `{shown}` appears twice"),
                    ));
                }
                if !lhs.contains(c) {
                    return Err(SpecError::at(
                        nth(0),
                        format!("output index `{shown}` does not appear in any operand"),
                    ));
                }
            }
            let mut o: Vec<char> = a;
            o.extend(&fresh);
            o.extend(b);
            o
        }
        None => {
            // numpy: the axes under `...`, then the letters that appear
            // exactly once, in alphabetical order (upper case first)
            let mut o = fresh.clone();
            o.extend(seen_once(
                parts.iter().flat_map(|(a, b)| a.iter().chain(b)).copied(),
            ));
            o
        }
    };
    let text = |l: &[char]| l.iter().collect::<String>();
    let explicit = format!(
        "{}->{}",
        labels.iter().map(|l| text(l)).collect::<Vec<_>>().join(","),
        text(&output)
    );
    Ok(Expanded { explicit, labels })
}

/// The letters of `letters` that appear exactly once, sorted: numpy's
/// implicit output.
fn seen_once(letters: impl Iterator<Item = char>) -> Vec<char> {
    let all: Vec<char> = letters.collect();
    let mut once: Vec<char> = all
        .iter()
        .copied()
        .filter(|c| all.iter().filter(|d| *d == c).count() == 1)
        .collect();
    once.sort();
    once
}

/// The parameter name of operand `k` in the function [`einsum`] builds:
/// `A`, `B`, …, `Z`, then `T26`, `T27`, ….
pub fn operand_name(k: usize) -> String {
    if k < 26 {
        ((b'A' + k as u8) as char).to_string()
    } else {
        format!("T{k}")
    }
}

fn size_of(c: char) -> Size {
    Size::Named(format!("n{}", index_name(c)))
}

/// The body `gen(out) sum(summed) Π factors` where `factors[j]` is the list
/// of array names multiplied at operand `j`.
fn body(spec: &Spec, factors: &[Vec<String>]) -> Expr {
    let mut summed: Vec<char> = Vec::new();
    for c in spec.inputs.iter().flatten() {
        if !spec.output.contains(c) && !summed.contains(c) {
            summed.push(*c);
        }
    }
    let mut prod: Option<Expr> = None;
    for (subs, names) in spec.inputs.iter().zip(factors) {
        for name in names {
            let mut e = Expr::var(name.clone());
            for c in subs {
                e = Expr::access(e, Affine::var(index_name(*c)));
            }
            prod = Some(match prod {
                None => e,
                Some(p) => Expr::bin(BinOp::Mul, p, e),
            });
        }
    }
    let mut e = prod.unwrap_or(Expr::Num(1.0));
    for c in summed.iter().rev() {
        e = Expr::sum(index_name(*c), size_of(*c), e);
    }
    for c in spec.output.iter().rev() {
        e = Expr::gen(index_name(*c), size_of(*c), e);
    }
    e
}

fn out_type(spec: &Spec) -> Type {
    Type::array(spec.output.iter().map(|c| size_of(*c)))
}

/// The function of a numpy einsum spec, e.g. `einsum("ij,jk->ik")`.
pub fn einsum(spec: &str) -> Result<Function> {
    let s = parse_spec(spec)?;
    let names: Vec<Vec<String>> = (0..s.inputs.len()).map(|k| vec![operand_name(k)]).collect();
    let params = s
        .inputs
        .iter()
        .enumerate()
        .map(|(k, subs)| Param {
            name: operand_name(k),
            ty: Type::array(subs.iter().map(|c| size_of(*c))),
        })
        .collect();
    finish(Function {
        name: "einsum".into(),
        params,
        ret: Some(out_type(&s)),
        body: body(&s, &names),
    })
}

/// [`einsum`] for operands of the given ranks, so that the spec may use
/// numpy's `...` (broadcast axes; see [`expand_ellipsis`]), which names
/// as many axes as each operand has beyond its letters:
///
/// ```
/// let f = einsat::frontend::einsum::einsum_ranked("...ij,...jk->...ik", &[3, 3])?;
/// assert_eq!(f.params.len(), 2);
/// # Ok::<(), einsat::Error>(())
/// ```
///
/// The operands' number and ranks must fit the spec (an error says which
/// does not).
pub fn einsum_ranked(spec: &str, ranks: &[usize]) -> Result<Function> {
    let e = expand_ellipsis(spec, ranks).map_err(|e| e.into_error(spec))?;
    einsum(&e.explicit)
}

fn finish(f: Function) -> Result<Function> {
    crate::types::check(&f).map_err(|d| {
        err(d
            .iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; "))
    })?;
    Ok(f)
}

/// Batched einsum: output `r` is the einsum `spec` whose operand `j` is the
/// product of the arrays named in `args[r][j]`. Outputs are returned as a
/// tuple `(R1, (R2, …))`; one output is not wrapped. Parameters are the
/// distinct array names in order of first appearance.
pub fn einsum_batched(spec: &str, args: &[Vec<Vec<String>>]) -> Result<Function> {
    let s = parse_spec(spec)?;
    if args.is_empty() {
        return Err(err("a batch needs at least one output"));
    }
    let mut params: Vec<Param> = Vec::new();
    let mut outputs = Vec::new();
    for (r, ops) in args.iter().enumerate() {
        if ops.len() != s.inputs.len() {
            return Err(err(format!(
                "output {r} names {} operands but the spec has {}",
                ops.len(),
                s.inputs.len()
            )));
        }
        for (subs, names) in s.inputs.iter().zip(ops) {
            if names.is_empty() {
                return Err(err(format!("output {r} has an operand with no array")));
            }
            for n in names {
                let valid = n
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !valid {
                    return Err(err(format!(
                        "`{}` is not a valid array name",
                        crate::diag::quote(n)
                    )));
                }
                let ty = Type::array(subs.iter().map(|c| size_of(*c)));
                match params.iter().find(|p| &p.name == n) {
                    Some(p) if p.ty != ty => {
                        return Err(err(format!(
                            "array `{}` is used with subscripts of different shapes",
                            crate::diag::quote(n)
                        )))
                    }
                    Some(_) => {}
                    None => params.push(Param {
                        name: n.clone(),
                        ty,
                    }),
                }
            }
        }
        outputs.push(body(&s, ops));
    }
    let ty = out_type(&s);
    let mut body = outputs.pop().expect("at least one output");
    let mut ret = ty.clone();
    while let Some(e) = outputs.pop() {
        body = Expr::pair(e, body);
        ret = Type::pair(ty.clone(), ret);
    }
    finish(Function {
        name: "einsum".into(),
        params,
        ret: Some(ret),
        body,
    })
}

/// Parse the CLI's batch syntax `"A*C,x;B,x"`: outputs separated by `;`,
/// operands by `,`, arrays multiplied within one operand by `*`.
pub fn parse_batch_args(s: &str) -> Result<Vec<Vec<Vec<String>>>> {
    s.split(';')
        .map(|out| {
            out.split(',')
                .map(|op| {
                    let names: Vec<String> = op.split('*').map(|n| n.trim().to_string()).collect();
                    if names.iter().any(|n| n.is_empty()) {
                        Err(err(format!(
                            "empty array name in `{}`",
                            crate::diag::quote(out)
                        )))
                    } else {
                        Ok(names)
                    }
                })
                .collect()
        })
        .collect()
}
