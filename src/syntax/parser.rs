//! Lexer and recursive-descent parser for the surface syntax of
//! `docs/language.md`.
//!
//! The parser returns the IR together with a [`SpanTree`] that mirrors each
//! function body node for node, so later stages can point at source text
//! without the IR carrying positions. A syntax error stops the function it is
//! in; parsing resumes at the next `fn`, so one run reports an error per
//! broken function.

use super::ast::*;
use crate::diag::{Diagnostic, Span};

/// Deepest expression nesting the parser accepts (guards the stack): each
/// parenthesis, bracket, call, binder body, `let`-bound value, negation and
/// index counts one level. Flat chains (`a + b + …`, `a * b * …`, `let …
/// in let … in …`, `x[i][j]…`, `p || q || …`) do not nest: they are limited
/// by [`MAX_FUNCTION_TOKENS`] only.
pub const MAX_DEPTH: usize = 256;
const TOO_DEEP: &str = "nested too deeply";
/// Most tokens one function may have (its size). The tree of a flat chain is
/// as deep as the chain is long; this bounds that depth, and so the work and
/// the stack of every later stage.
pub const MAX_FUNCTION_TOKENS: usize = 200_000;
/// Deepest tree a function body may have (a chain of `k` operators or `k`
/// `let`s is about `k` deep). Every stage of the library either walks the
/// tree without deep recursion or grows its stack ([`crate::stack`]); the
/// default (recursive) drop of a tree this deep needs about 2 MiB of stack.
pub const MAX_TREE_DEPTH: usize = 12_000;
/// Most `||`/`&&` operands in one Iverson bracket.
pub const MAX_PRED_TERMS: usize = 1024;
const TOO_LARGE: &str = "too large";

/// The message for an index expression that could overflow.
fn index_range_msg() -> String {
    format!(
        "index expression out of range: for every index value below 2^31 it must stay within ±2^62 \
         (Σ|coefficient|·2^31 + |constant| ≤ {MAX_INDEX_MAGNITUDE})"
    )
}

/// Source positions of an expression tree: `children` follow
/// [`Expr::children`] order exactly.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct SpanTree {
    /// The node's source range.
    pub span: Span,
    /// Spans of the node's children, in the order of [`crate::syntax::Expr::children`].
    pub children: Vec<SpanTree>,
    /// Depth of this tree (a leaf has depth 1), the depth of the expression
    /// it mirrors: the parser enforces [`MAX_TREE_DEPTH`] with it as the
    /// tree is built.
    pub depth: usize,
}

impl SpanTree {
    /// A node without children.
    pub fn leaf(span: Span) -> SpanTree {
        SpanTree {
            span,
            children: vec![],
            depth: 1,
        }
    }
    /// A node with children.
    pub fn node(span: Span, children: Vec<SpanTree>) -> SpanTree {
        let depth = 1 + children.iter().map(|c| c.depth).max().unwrap_or(0);
        SpanTree {
            span,
            children,
            depth,
        }
    }
}

impl Drop for SpanTree {
    /// Iterative, so that the span tree of a 10,000-term chain drops on any
    /// thread's stack.
    fn drop(&mut self) {
        let mut todo = std::mem::take(&mut self.children);
        while let Some(mut t) = todo.pop() {
            todo.append(&mut t.children);
        }
    }
}

/// Where the pieces of a parsed function are in the source.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct FunctionSpans {
    /// The function's name.
    pub name: Span,
    /// Each parameter's declaration.
    pub params: Vec<Span>,
    /// The declared result type, when written.
    pub ret: Option<Span>,
    /// The body, node for node.
    pub body: SpanTree,
}

/// A parsed file: the program and the spans of each function.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Parsed {
    /// The functions.
    pub program: Program,
    /// Source spans of each function, in the same order.
    pub spans: Vec<FunctionSpans>,
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Int(u64),
    Float(f64),
    Sym(&'static str),
    Eof,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Int(n) => format!("`{n}`"),
            Tok::Float(x) => format!("`{x}`"),
            Tok::Sym(s) => format!("`{s}`"),
            Tok::Eof => "end of input".into(),
        }
    }
}

const SYMS: [&str; 25] = [
    "->", "==", "!=", "<=", ">=", "&&", "||", "(", ")", "[", "]", ",", ":", ";", "+", "-", "*",
    "/", "=", "<", ">", "!", ".", "{", "}",
];

/// How an unexpected character is shown: itself when visible, else its code
/// point (a NUL byte, a control character, an invisible format character).
fn show_char(ch: char) -> String {
    let invisible = ch.is_control()
        || ch.is_whitespace()
        || matches!(ch, '\u{200B}'..='\u{200F}' | '\u{2060}'..='\u{206F}' | '\u{FEFF}');
    if invisible {
        let name = match ch {
            '\0' => " (NUL, `\\0`)",
            '\u{FEFF}' => " (a byte-order mark)",
            _ => "",
        };
        format!("U+{:04X}{name}", ch as u32)
    } else {
        format!("`{ch}`")
    }
}

fn lex(src: &str) -> Result<Vec<(Tok, Span)>, Diagnostic> {
    let b = src.as_bytes();
    // a UTF-8 byte-order mark at the start is skipped
    let mut i = if src.starts_with('\u{FEFF}') { 3 } else { 0 };
    let mut out: Vec<(Tok, Span)> = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'#' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let start = i;
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Ident(src[start..i].to_string()), Span::new(start, i)));
            continue;
        }
        if c.is_ascii_digit() {
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let after_dot = matches!(out.last(), Some((Tok::Sym("."), _)));
            let mut is_float = false;
            if !after_dot {
                if i + 1 < b.len() && b[i] == b'.' && b[i + 1].is_ascii_digit() {
                    is_float = true;
                    i += 1;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                } else if i < b.len()
                    && b[i] == b'.'
                    && !(i + 1 < b.len() && b[i + 1].is_ascii_digit())
                {
                    // `2.` is a number too
                    is_float = true;
                    i += 1;
                }
                if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                    let mut j = i + 1;
                    if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
                        j += 1;
                    }
                    if j < b.len() && b[j].is_ascii_digit() {
                        is_float = true;
                        i = j;
                        while i < b.len() && b[i].is_ascii_digit() {
                            i += 1;
                        }
                    }
                }
            }
            let text = &src[start..i];
            let span = Span::new(start, i);
            let tok = if is_float {
                let x: f64 = text.parse().map_err(|_| {
                    Diagnostic::new(format!("malformed number `{text}`"), Some(span))
                })?;
                if !x.is_finite() {
                    return Err(Diagnostic::new(
                        format!("number `{text}` is too large for an f64"),
                        Some(span),
                    ));
                }
                Tok::Float(x)
            } else {
                match text.parse::<u64>() {
                    Ok(n) => Tok::Int(n),
                    Err(_) => {
                        let x: f64 = text.parse().map_err(|_| {
                            Diagnostic::new(format!("malformed number `{text}`"), Some(span))
                        })?;
                        if !x.is_finite() {
                            return Err(Diagnostic::new(
                                format!("number `{text}` is too large for an f64"),
                                Some(span),
                            ));
                        }
                        Tok::Float(x)
                    }
                }
            };
            out.push((tok, span));
            continue;
        }
        let rest = &src[i..];
        match SYMS.iter().find(|s| rest.starts_with(**s)) {
            Some(s) => {
                i += s.len();
                out.push((Tok::Sym(s), Span::new(start, i)));
            }
            None => {
                let ch = rest.chars().next().unwrap();
                return Err(Diagnostic::new(
                    format!("unexpected character {}", show_char(ch)),
                    Some(Span::new(start, start + ch.len_utf8())),
                ));
            }
        }
    }
    out.push((Tok::Eof, Span::new(src.len(), src.len())));
    Ok(out)
}

const KEYWORDS: [&str; 5] = ["fn", "let", "in", "gen", "sum"];

struct Parser<'s> {
    /// The source text (for where an unclosed delimiter was opened).
    src: &'s str,
    toks: Vec<(Tok, Span)>,
    pos: usize,
    depth: usize,
    /// Where the current function (or expression) starts, in tokens.
    start: usize,
}

type PResult<T> = Result<T, Diagnostic>;

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].0
    }
    fn peek_at(&self, k: usize) -> &Tok {
        &self.toks[(self.pos + k).min(self.toks.len() - 1)].0
    }
    fn span(&self) -> Span {
        self.toks[self.pos].1
    }
    fn prev_end(&self) -> usize {
        if self.pos == 0 {
            0
        } else {
            self.toks[self.pos - 1].1.end
        }
    }
    fn bump(&mut self) -> (Tok, Span) {
        let t = self.toks[self.pos].clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }
    fn is_sym(&self, s: &str) -> bool {
        matches!(self.peek(), Tok::Sym(x) if *x == s)
    }
    fn is_kw(&self, s: &str) -> bool {
        matches!(self.peek(), Tok::Ident(x) if x == s)
    }
    fn eat_sym(&mut self, s: &str) -> bool {
        if self.is_sym(s) {
            self.bump();
            true
        } else {
            false
        }
    }
    fn err<T>(&self, msg: impl Into<String>) -> PResult<T> {
        Err(Diagnostic::new(msg, Some(self.span())))
    }
    fn expect_sym(&mut self, s: &str, what: &str) -> PResult<Span> {
        if self.is_sym(s) {
            Ok(self.bump().1)
        } else {
            self.err(format!(
                "expected `{s}` {what}, found {}",
                self.peek().describe()
            ))
        }
    }
    /// Expect the closing delimiter `s` of the one opened at `open`. When
    /// what stands in its place is on a later line (or ends the function),
    /// the delimiter was most likely never closed: the error points at the
    /// opening one and says where the parser stopped.
    fn expect_close(&mut self, open: Span, s: &str, what: &str) -> PResult<Span> {
        if self.is_sym(s) {
            return Ok(self.bump().1);
        }
        let found = self.span();
        let gap = self.src.get(open.end..found.start).unwrap_or("");
        if matches!(self.peek(), Tok::Eof) || self.is_kw("fn") || gap.contains('\n') {
            let opened = self.src.get(open.start..open.end).unwrap_or("(");
            let (l, c) = crate::diag::line_col(self.src, found.start);
            return Err(Diagnostic::new(
                format!(
                    "`{opened}` is never closed: expected `{s}` {what}, found {} at {l}:{c}",
                    self.peek().describe()
                ),
                Some(open),
            ));
        }
        self.expect_sym(s, what)
    }
    fn expect_kw(&mut self, s: &str, what: &str) -> PResult<Span> {
        if self.is_kw(s) {
            Ok(self.bump().1)
        } else {
            self.err(format!(
                "expected `{s}` {what}, found {}",
                self.peek().describe()
            ))
        }
    }
    fn ident(&mut self, what: &str) -> PResult<(String, Span)> {
        match self.peek().clone() {
            Tok::Ident(s) if !KEYWORDS.contains(&s.as_str()) => {
                let sp = self.bump().1;
                Ok((s, sp))
            }
            t => self.err(format!("expected {what}, found {}", t.describe())),
        }
    }
    /// Refuse a function past [`MAX_FUNCTION_TOKENS`]: called wherever the
    /// tree can grow without nesting.
    fn grow(&self) -> PResult<()> {
        if self.pos - self.start > MAX_FUNCTION_TOKENS {
            return self.err(format!(
                "function {TOO_LARGE}: more than {MAX_FUNCTION_TOKENS} tokens (split it into several functions)"
            ));
        }
        Ok(())
    }
    /// Refuse a tree past [`MAX_TREE_DEPTH`], dropping it without deep
    /// recursion: checked wherever a chain grows, so no tree the parser
    /// holds is ever much deeper than the limit.
    fn shallow(&self, e: Expr, sp: SpanTree) -> PResult<(Expr, SpanTree)> {
        if sp.depth <= MAX_TREE_DEPTH {
            return Ok((e, sp));
        }
        drop_iteratively(e);
        Err(Diagnostic::new(
            format!(
                "expression {TOO_LARGE}: its tree is more than {MAX_TREE_DEPTH} levels deep (a chain of that many operators or `let`s; split it into several functions)"
            ),
            Some(sp.span),
        ))
    }
    fn pred_terms(&self, terms: usize) -> PResult<()> {
        if terms > MAX_PRED_TERMS {
            return self.err(format!(
                "predicate {TOO_LARGE}: more than {MAX_PRED_TERMS} operands of `||` or `&&` in a row"
            ));
        }
        self.grow()
    }
    fn enter(&mut self) -> PResult<()> {
        self.grow()?;
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.err(format!(
                "expression {TOO_DEEP} (more than {MAX_DEPTH} levels)"
            ));
        }
        Ok(())
    }

    // ---- functions and types ----

    fn function(&mut self) -> PResult<(Function, FunctionSpans)> {
        self.expect_kw("fn", "to start a function")?;
        let (name, name_span) = self.ident("a function name")?;
        let open = self.expect_sym("(", "after the function name")?;
        let mut params = Vec::new();
        let mut pspans = Vec::new();
        if !self.is_sym(")") {
            loop {
                let (pname, psp) = self.ident("a parameter name")?;
                self.expect_sym(":", "after the parameter name")?;
                let ty = self.ty()?;
                params.push(Param { name: pname, ty });
                pspans.push(psp.join(Span::new(psp.start, self.prev_end())));
                if !self.eat_sym(",") {
                    break;
                }
            }
        }
        self.expect_close(open, ")", "to close the parameter list")?;
        let (ret, ret_span) = if self.eat_sym("->") {
            let s = self.span().start;
            let t = self.ty()?;
            (Some(t), Some(Span::new(s, self.prev_end())))
        } else {
            (None, None)
        };
        self.expect_sym("=", "before the function body")?;
        let (body, bsp) = self.expr()?;
        let sizes = Function {
            name: String::new(),
            params: params.clone(),
            ret: None,
            body: Expr::Num(0.0),
        }
        .size_names();
        let mut scope = Scope {
            sizes: &sizes,
            values: params.iter().map(|p| p.name.clone()).collect(),
            indices: Vec::new(),
        };
        let (body, bsp) = resolve(body, bsp, &mut scope)?;
        self.eat_sym(";");
        if !matches!(self.peek(), Tok::Eof) && !self.is_kw("fn") {
            return self.err(format!(
                "unexpected {} after the function body (a binder extends as far right as possible; an operator or `)` may be missing)",
                self.peek().describe()
            ));
        }
        Ok((
            Function {
                name,
                params,
                ret,
                body,
            },
            FunctionSpans {
                name: name_span,
                params: pspans,
                ret: ret_span,
                body: bsp,
            },
        ))
    }

    fn size(&mut self) -> PResult<Size> {
        match self.peek().clone() {
            Tok::Int(n) => {
                self.bump();
                Ok(Size::Lit(n as usize))
            }
            Tok::Ident(s) if !KEYWORDS.contains(&s.as_str()) => {
                self.bump();
                Ok(Size::Named(s))
            }
            t => self.err(format!(
                "expected a size (an integer or a size name), found {}",
                t.describe()
            )),
        }
    }

    fn ty(&mut self) -> PResult<Type> {
        self.enter()?;
        let r = self.ty_inner();
        self.depth -= 1;
        r
    }

    fn ty_inner(&mut self) -> PResult<Type> {
        if self.is_kw("R") {
            self.bump();
            return Ok(Type::Real);
        }
        if self.is_kw("Z") {
            self.bump();
            return Ok(Type::Int);
        }
        if self.is_sym("[") {
            let open = self.bump().1;
            let mut sizes = vec![self.size()?];
            while self.eat_sym(",") {
                sizes.push(self.size()?);
            }
            self.expect_close(open, "]", "to close the sizes of a tensor type")?;
            let elem = if self.is_kw("R") || self.is_kw("Z") || self.is_sym("[") || self.is_sym("(")
            {
                self.ty()?
            } else {
                Type::Real
            };
            return Ok(sizes
                .into_iter()
                .rev()
                .fold(elem, |t, s| Type::tensor(s, t)));
        }
        if self.is_sym("(") {
            let open = self.bump().1;
            let a = self.ty()?;
            self.expect_sym(",", "between the two components of a pair type")?;
            let b = self.ty()?;
            self.expect_close(open, ")", "to close a pair type")?;
            return Ok(Type::pair(a, b));
        }
        self.err(format!(
            "expected a type (`R`, `[n]T` or `(T, U)`), found {}",
            self.peek().describe()
        ))
    }

    // ---- expressions ----

    fn expr(&mut self) -> PResult<(Expr, SpanTree)> {
        self.enter()?;
        let r = self.additive();
        self.depth -= 1;
        r
    }

    fn additive(&mut self) -> PResult<(Expr, SpanTree)> {
        self.left_chain([("+", BinOp::Add), ("-", BinOp::Sub)], Self::multiplicative)
    }

    fn multiplicative(&mut self) -> PResult<(Expr, SpanTree)> {
        self.left_chain([("*", BinOp::Mul), ("/", BinOp::Div)], |p| {
            let (e, sp) = p.unary()?;
            p.shallow(e, sp)
        })
    }

    /// A chain `a op b op c …` of the binary operators `ops` over operands
    /// read by `operand`. It is flat in the source: it nests to the left in
    /// the tree but costs no nesting level (its length is capped by size).
    fn left_chain(
        &mut self,
        ops: [(&str, BinOp); 2],
        operand: fn(&mut Self) -> PResult<(Expr, SpanTree)>,
    ) -> PResult<(Expr, SpanTree)> {
        let (mut e, mut sp) = operand(self)?;
        while let Some(&(_, op)) = ops.iter().find(|(sym, _)| self.is_sym(sym)) {
            self.bump();
            // a failure drops the chain built so far without deep recursion
            let (r, rsp) = match self.grow().and_then(|()| operand(self)) {
                Ok(x) => x,
                Err(d) => {
                    drop_iteratively(e);
                    return Err(d);
                }
            };
            let span = sp.span.join(rsp.span);
            (e, sp) = self.shallow(Expr::bin(op, e, r), SpanTree::node(span, vec![sp, rsp]))?;
        }
        Ok((e, sp))
    }

    fn unary(&mut self) -> PResult<(Expr, SpanTree)> {
        let start = self.span();
        if self.eat_sym("-") {
            self.enter()?;
            let r = self.unary();
            self.depth -= 1;
            let (e, sp) = r?;
            let span = start.join(sp.span);
            return Ok((Expr::Neg(Box::new(e)), SpanTree::node(span, vec![sp])));
        }
        if self.is_kw("let") {
            // `let x = e1 in let y = e2 in …` is flat in the source: read the
            // whole block in a loop (only the bound values nest)
            let mut block = Vec::new();
            while self.is_kw("let") {
                let lstart = self.span();
                self.bump();
                self.grow()?;
                let (x, _) = self.ident("a name after `let`")?;
                self.expect_sym("=", "after the name in `let`")?;
                let (e1, s1) = self.expr()?;
                self.expect_kw("in", "after the bound value of `let`")?;
                block.push((lstart, x, e1, s1));
            }
            let (mut e, mut sp) = self.expr()?;
            let end = sp.span.end;
            while let Some((lstart, x, e1, s1)) = block.pop() {
                e = Expr::let_(x, e1, e);
                sp = SpanTree::node(Span::new(lstart.start, end), vec![s1, sp]);
            }
            return Ok((e, sp));
        }
        if self.is_kw("fold") && matches!(self.peek_at(1), Tok::Sym("(")) {
            return self.fold(start);
        }
        // `max(i:n) e`, `min(i:n) e`: a reduction, told from the binary
        // `max(a, b)` by the `index :` after the parenthesis
        let red = match (
            self.peek(),
            self.peek_at(1),
            self.peek_at(2),
            self.peek_at(3),
        ) {
            (Tok::Ident(s), Tok::Sym("("), Tok::Ident(_), Tok::Sym(":")) => RedOp::from_name(s),
            _ => None,
        };
        if self.is_kw("gen") || self.is_kw("sum") || red.is_some() {
            let is_gen = self.is_kw("gen");
            let kw = match red {
                Some(r) => r.name(),
                None if is_gen => "gen",
                None => "sum",
            };
            self.bump();
            let open = self.expect_sym("(", &format!("after `{kw}`"))?;
            let mut binders = Vec::new();
            loop {
                let bstart = self.span();
                self.grow()?;
                let (i, _) = self.ident("an index name")?;
                self.expect_sym(":", "between the index name and its range")?;
                let n = self.size()?;
                binders.push((i, n, bstart));
                if !self.eat_sym(",") {
                    break;
                }
            }
            self.expect_close(open, ")", &format!("to close the binders of `{kw}`"))?;
            if matches!(self.peek(), Tok::Eof) || self.is_kw("fn") {
                return self.err(format!("`{kw}` has no body"));
            }
            let (mut e, mut sp) = self.expr()?;
            let end = sp.span.end;
            for (k, (i, n, bstart)) in binders.into_iter().enumerate().rev() {
                let s = if k == 0 { start } else { bstart };
                e = if let Some(r) = red {
                    Expr::reduce(r, i, n, e)
                } else if is_gen {
                    Expr::gen(i, n, e)
                } else {
                    Expr::sum(i, n, e)
                };
                sp = SpanTree::node(Span::new(s.start, end), vec![sp]);
            }
            return Ok((e, sp));
        }
        self.postfix()
    }

    /// `fold(i:n, acc = init) body` (at `fold`, which `start` spans).
    fn fold(&mut self, start: Span) -> PResult<(Expr, SpanTree)> {
        const FORM: &str = "(a fold is written `fold(i:n, acc = init) body`)";
        self.bump();
        let open = self.bump().1;
        self.grow()?;
        let (i, _) = self.ident(&format!("an index name after `fold(` {FORM}"))?;
        self.expect_sym(":", &format!("between the index name and its range {FORM}"))?;
        let n = self.size()?;
        self.expect_sym(",", &format!("after the range of `fold` {FORM}"))?;
        let (acc, acc_sp) = self.ident(&format!("the accumulator's name {FORM}"))?;
        self.expect_sym("=", &format!("after the accumulator's name {FORM}"))?;
        let (init, s_init) = self.expr()?;
        self.expect_close(open, ")", "to close the head of `fold`")?;
        if matches!(self.peek(), Tok::Eof) || self.is_kw("fn") {
            return self.err("`fold` has no body");
        }
        if acc == i {
            return Err(Diagnostic::new(
                format!("the accumulator of `fold` has the name of its index, `{i}`: rename one"),
                Some(acc_sp),
            ));
        }
        let (body, s_body) = self.expr()?;
        let span = Span::new(start.start, s_body.span.end);
        Ok((
            Expr::fold(i, n, acc, init, body),
            SpanTree::node(span, vec![s_init, s_body]),
        ))
    }

    fn postfix(&mut self) -> PResult<(Expr, SpanTree)> {
        let (mut e, mut sp) = self.primary()?;
        match self.postfix_loop(&mut e, &mut sp) {
            Ok(()) => Ok((e, sp)),
            Err(d) => {
                // a long access chain drops without deep recursion
                drop_iteratively(e);
                Err(d)
            }
        }
    }

    fn postfix_loop(&mut self, e: &mut Expr, sp: &mut SpanTree) -> PResult<()> {
        loop {
            self.grow()?;
            if sp.depth > MAX_TREE_DEPTH {
                // the caller drops the chain without deep recursion
                return self.shallow(Expr::Num(0.0), std::mem::take(sp)).map(|_| ());
            }
            if self.is_sym("[") {
                let open = self.bump().1;
                loop {
                    if self.at_gather() {
                        let (g, gsp, c) = self.gather_index()?;
                        let span = Span::new(sp.span.start, self.prev_end());
                        *e = Expr::gather(std::mem::replace(e, Expr::Num(0.0)), g, c);
                        *sp = SpanTree::node(span, vec![std::mem::take(sp), gsp]);
                        if !self.eat_sym(",") {
                            break;
                        }
                        continue;
                    }
                    let idx = self.affine()?;
                    let span = Span::new(sp.span.start, self.prev_end());
                    *e = Expr::access(std::mem::replace(e, Expr::Num(0.0)), idx);
                    *sp = SpanTree::node(span, vec![std::mem::take(sp)]);
                    if !self.eat_sym(",") {
                        break;
                    }
                }
                let close = self.expect_close(open, "]", "to close an index")?;
                sp.span.end = close.end;
            } else if self.is_sym(".") {
                self.bump();
                let k = match self.peek() {
                    Tok::Int(0) => 0,
                    Tok::Int(1) => 1,
                    t => {
                        return self.err(format!(
                            "expected `0` or `1` after `.` (a pair projection), found {}",
                            t.describe()
                        ))
                    }
                };
                let ksp = self.bump().1;
                let span = sp.span.join(ksp);
                *e = Expr::proj(k, std::mem::replace(e, Expr::Num(0.0)));
                *sp = SpanTree::node(span, vec![std::mem::take(sp)]);
            } else {
                break;
            }
        }
        Ok(())
    }

    fn primary(&mut self) -> PResult<(Expr, SpanTree)> {
        let start = self.span();
        match self.peek().clone() {
            Tok::Int(n) => {
                self.bump();
                Ok((Expr::Num(n as f64), SpanTree::leaf(start)))
            }
            Tok::Float(x) => {
                self.bump();
                Ok((Expr::Num(x), SpanTree::leaf(start)))
            }
            Tok::Sym("(") => {
                self.bump();
                let (a, sa) = self.expr()?;
                if self.eat_sym(",") {
                    let (b, sb) = self.expr()?;
                    let close = self.expect_close(start, ")", "to close a pair")?;
                    Ok((
                        Expr::pair(a, b),
                        SpanTree::node(start.join(close), vec![sa, sb]),
                    ))
                } else {
                    self.expect_close(start, ")", "to close a parenthesis")?;
                    Ok((a, sa))
                }
            }
            Tok::Sym("[") => {
                self.bump();
                let p = self.pred()?;
                let close = self.expect_close(start, "]", "to close an Iverson bracket")?;
                Ok((Expr::Bracket(p), SpanTree::leaf(start.join(close))))
            }
            Tok::Ident(s) if s == "eps" && matches!(self.peek_at(1), Tok::Sym("[")) => {
                self.bump();
                let open = self.bump().1;
                let mut idx = vec![self.affine()?];
                while self.eat_sym(",") {
                    idx.push(self.affine()?);
                }
                let close = self.expect_close(open, "]", "to close `eps[...]`")?;
                if idx.len() != 2 && idx.len() != 3 {
                    return Err(Diagnostic::new(
                        format!("`eps` takes 2 or 3 indices, not {}", idx.len()),
                        Some(start.join(close)),
                    ));
                }
                Ok((Expr::Eps(idx), SpanTree::leaf(start.join(close))))
            }
            Tok::Ident(s) if s == "where" && matches!(self.peek_at(1), Tok::Sym("(")) => {
                self.bump();
                let open = self.bump().1;
                let mut spans = Vec::new();
                let c = self.cond(&mut spans)?;
                self.expect_sym(",", "after the condition of `where`")?;
                let (a, sa) = self.expr()?;
                self.expect_sym(",", "after the first value of `where`")?;
                let (b, sb) = self.expr()?;
                let close = self.expect_close(open, ")", "to close `where(...)`")?;
                spans.push(sa);
                spans.push(sb);
                Ok((
                    Expr::where_(c, a, b),
                    SpanTree::node(start.join(close), spans),
                ))
            }
            Tok::Ident(s)
                if Func::from_name(&s).is_some() && matches!(self.peek_at(1), Tok::Sym("(")) =>
            {
                let f = Func::from_name(&s).unwrap();
                self.bump();
                let open = self.bump().1;
                let mut args = Vec::new();
                let mut spans = Vec::new();
                if !self.is_sym(")") {
                    loop {
                        let (a, sa) = self.expr()?;
                        args.push(a);
                        spans.push(sa);
                        if !self.eat_sym(",") {
                            break;
                        }
                    }
                }
                let close =
                    self.expect_close(open, ")", &format!("to close the arguments of `{s}`"))?;
                if args.len() != f.arity() {
                    return Err(Diagnostic::new(
                        format!(
                            "`{s}` takes {} argument{}, not {}",
                            f.arity(),
                            if f.arity() == 1 { "" } else { "s" },
                            args.len()
                        ),
                        Some(start.join(close)),
                    ));
                }
                Ok((
                    Expr::Call(f, args),
                    SpanTree::node(start.join(close), spans),
                ))
            }
            Tok::Ident(s)
                if !KEYWORDS.contains(&s.as_str()) && matches!(self.peek_at(1), Tok::Sym("(")) =>
            {
                Err(Diagnostic::new(unknown_function(&s), Some(start)))
            }
            Tok::Ident(s) if !KEYWORDS.contains(&s.as_str()) => {
                self.bump();
                Ok((Expr::Var(s), SpanTree::leaf(start)))
            }
            t if self.pos > 0 && (matches!(t, Tok::Eof) || self.is_kw("fn")) => {
                // the expression is missing at the end of the function:
                // point at what it should follow, not at the next function
                let (prev, psp) = self.toks[self.pos - 1].clone();
                let (l, c) = crate::diag::line_col(self.src, start.start);
                Err(Diagnostic::new(
                    format!(
                        "expected an expression after {}, found {} at {l}:{c}",
                        prev.describe(),
                        t.describe()
                    ),
                    Some(psp),
                ))
            }
            t => self.err(format!("expected an expression, found {}", t.describe())),
        }
    }

    // ---- conditions of `where` ----

    /// A condition: comparisons of numbers with `&&`, `||`, `!` and
    /// parentheses, as in a predicate. `spans` receives the spans of the
    /// compared numbers, left to right.
    fn cond(&mut self, spans: &mut Vec<SpanTree>) -> PResult<Cond> {
        self.enter()?;
        let r = self.cond_or(spans);
        self.depth -= 1;
        r
    }

    fn cond_or(&mut self, spans: &mut Vec<SpanTree>) -> PResult<Cond> {
        let mut c = self.cond_and(spans)?;
        let mut terms = 1;
        while self.eat_sym("||") {
            terms += 1;
            self.pred_terms(terms)?;
            c = Cond::Or(Box::new(c), Box::new(self.cond_and(spans)?));
        }
        Ok(c)
    }

    fn cond_and(&mut self, spans: &mut Vec<SpanTree>) -> PResult<Cond> {
        let mut c = self.cond_not(spans)?;
        let mut terms = 1;
        while self.eat_sym("&&") {
            terms += 1;
            self.pred_terms(terms)?;
            c = Cond::And(Box::new(c), Box::new(self.cond_not(spans)?));
        }
        Ok(c)
    }

    fn cond_not(&mut self, spans: &mut Vec<SpanTree>) -> PResult<Cond> {
        if self.eat_sym("!") {
            self.enter()?;
            let c = self.cond_not(spans);
            self.depth -= 1;
            return Ok(Cond::Not(Box::new(c?)));
        }
        if self.is_sym("(") {
            // a parenthesised condition, or a parenthesised number starting
            // a comparison: try the first, fall back
            let save = self.pos;
            let saved = spans.len();
            self.bump();
            match self.cond(spans) {
                Ok(c) => {
                    if self.eat_sym(")")
                        && !self.at_cmp()
                        && !["+", "-", "*", "/", "[", "."]
                            .iter()
                            .any(|s| self.is_sym(s))
                    {
                        return Ok(c);
                    }
                }
                Err(e) if e.message.contains(TOO_DEEP) => return Err(e),
                Err(_) => {}
            }
            spans.truncate(saved);
            self.pos = save;
        }
        let (a, sa) = self.expr()?;
        let op = match self.peek() {
            Tok::Sym("=") | Tok::Sym("==") => CmpOp::Eq,
            Tok::Sym("!=") => CmpOp::Ne,
            Tok::Sym("<") => CmpOp::Lt,
            Tok::Sym("<=") => CmpOp::Le,
            Tok::Sym(">") => CmpOp::Gt,
            Tok::Sym(">=") => CmpOp::Ge,
            t => {
                return self.err(format!(
                    "expected a comparison (`=`, `!=`, `<`, `<=`, `>`, `>=`) in the condition of `where`, found {} (a condition compares two numbers)",
                    t.describe()
                ))
            }
        };
        self.bump();
        let (b, sb) = self.expr()?;
        spans.push(sa);
        spans.push(sb);
        Ok(Cond::Cmp(op, Box::new(a), Box::new(b)))
    }

    // ---- index expressions and predicates ----

    /// Whether an index starts with a name followed by `[`: a gather,
    /// `x[tok[i]]`.
    fn at_gather(&self) -> bool {
        matches!(self.peek(), Tok::Ident(s) if !KEYWORDS.contains(&s.as_str()))
            && matches!(self.peek_at(1), Tok::Sym("["))
    }

    /// A gather index `tok[a, ...]`, `tok[a] + c` or `tok[a] - c` (an
    /// integer array read at affine indices, plus or minus an integer).
    fn gather_index(&mut self) -> PResult<(Expr, SpanTree, i64)> {
        let start = self.span();
        let (name, nsp) = self.ident("an integer array")?;
        let mut g = Expr::Var(name);
        let mut gsp = SpanTree::leaf(nsp);
        let open = self.expect_sym("[", "after an integer array's name")?;
        loop {
            if self.at_gather() {
                return self.err(
                    "a gather's index may not itself hold a gather (write `tok[i]` with affine indices inside)",
                );
            }
            let idx = self.affine()?;
            let span = Span::new(start.start, self.prev_end());
            g = Expr::access(g, idx);
            gsp = SpanTree::node(span, vec![gsp]);
            if !self.eat_sym(",") {
                break;
            }
        }
        let close = self.expect_close(open, "]", "to close an integer array's index")?;
        gsp.span.end = close.end;
        let mut c: i64 = 0;
        loop {
            let neg = if self.is_sym("+") {
                false
            } else if self.is_sym("-") {
                true
            } else {
                break;
            };
            let at = self.span();
            self.bump();
            let k = match self.peek().clone() {
                Tok::Int(n) if n <= MAX_INDEX_MAGNITUDE as u64 => n as i64,
                t => {
                    return self.err(format!(
                        "a gather's index is an integer array read plus or minus an integer, found {} after `{}`",
                        t.describe(),
                        if neg { "-" } else { "+" }
                    ))
                }
            };
            self.bump();
            c = if neg {
                c.checked_sub(k)
            } else {
                c.checked_add(k)
            }
            .filter(|c| c.unsigned_abs() <= MAX_INDEX_MAGNITUDE as u64)
            .ok_or_else(|| self.range_err(at))?;
        }
        if !(self.is_sym(",") || self.is_sym("]")) {
            return self.err(format!(
                "a gather's index is an integer array read plus or minus an integer (`tok[i] + 1`), found {}",
                self.peek().describe()
            ));
        }
        Ok((g, gsp, c))
    }

    fn affine(&mut self) -> PResult<Affine> {
        self.enter()?;
        let start = self.span();
        let r = self.affine_sum();
        self.depth -= 1;
        let a = r?;
        if !a.in_index_range() {
            return Err(self.range_err(start));
        }
        Ok(a)
    }

    fn range_err(&self, start: Span) -> Diagnostic {
        Diagnostic::new(
            index_range_msg(),
            Some(Span::new(start.start, self.prev_end().max(start.end))),
        )
    }

    /// Every intermediate result is checked: a sum or product that leaves the
    /// index range is an error at once, so nothing can wrap around.
    fn affine_sum(&mut self) -> PResult<Affine> {
        let start = self.span();
        let mut a = self.affine_term()?;
        loop {
            let sub = if self.eat_sym("+") {
                false
            } else if self.eat_sym("-") {
                true
            } else {
                return Ok(a);
            };
            self.grow()?;
            let b = self.affine_term()?;
            a = if sub {
                a.checked_sub(&b)
            } else {
                a.checked_add(&b)
            }
            .filter(Affine::in_index_range)
            .ok_or_else(|| self.range_err(start))?;
        }
    }

    fn affine_term(&mut self) -> PResult<Affine> {
        let start = self.span();
        if self.eat_sym("-") {
            self.enter()?;
            let t = self.affine_term();
            self.depth -= 1;
            return t?.checked_scale(-1).ok_or_else(|| self.range_err(start));
        }
        let mut a = self.affine_atom()?;
        while self.eat_sym("*") {
            let b = self.affine_atom()?;
            a = match (a.as_const(), b.as_const()) {
                (Some(c), _) => b.checked_scale(c),
                (_, Some(c)) => a.checked_scale(c),
                _ => {
                    return Err(Diagnostic::new(
                        "index expressions must be affine: one side of `*` must be an integer",
                        Some(Span::new(start.start, self.prev_end())),
                    ))
                }
            }
            .filter(Affine::in_index_range)
            .ok_or_else(|| self.range_err(start))?;
        }
        Ok(a)
    }

    fn affine_atom(&mut self) -> PResult<Affine> {
        match self.peek().clone() {
            Tok::Int(n) => {
                if n > MAX_INDEX_MAGNITUDE as u64 {
                    return self.err(format!(
                        "index constant `{n}` is too large (at most 2^62 = {MAX_INDEX_MAGNITUDE})"
                    ));
                }
                self.bump();
                Ok(Affine::constant(n as i64))
            }
            Tok::Ident(s) if !KEYWORDS.contains(&s.as_str()) => {
                self.bump();
                Ok(Affine::var(s))
            }
            Tok::Sym("(") => {
                let open = self.bump().1;
                let a = self.affine()?;
                self.expect_close(open, ")", "to close a parenthesis in an index")?;
                Ok(a)
            }
            Tok::Float(_) => self.err("an index must be an integer expression"),
            t => self.err(format!(
                "expected an index expression, found {}",
                t.describe()
            )),
        }
    }

    fn pred(&mut self) -> PResult<Pred> {
        self.enter()?;
        let r = self.pred_or();
        self.depth -= 1;
        r
    }

    fn pred_or(&mut self) -> PResult<Pred> {
        let mut p = self.pred_and()?;
        let mut terms = 1;
        while self.eat_sym("||") {
            terms += 1;
            self.pred_terms(terms)?;
            p = Pred::Or(Box::new(p), Box::new(self.pred_and()?));
        }
        Ok(p)
    }

    fn pred_and(&mut self) -> PResult<Pred> {
        let mut p = self.pred_not()?;
        let mut terms = 1;
        while self.eat_sym("&&") {
            terms += 1;
            self.pred_terms(terms)?;
            p = Pred::And(Box::new(p), Box::new(self.pred_not()?));
        }
        Ok(p)
    }

    fn pred_not(&mut self) -> PResult<Pred> {
        if self.eat_sym("!") {
            self.enter()?;
            let p = self.pred_not();
            self.depth -= 1;
            return Ok(Pred::Not(Box::new(p?)));
        }
        if self.is_sym("(") {
            // Either a parenthesised predicate or a parenthesised index
            // expression starting a comparison: try the first, fall back.
            let save = self.pos;
            self.bump();
            match self.pred() {
                Ok(p) => {
                    if self.eat_sym(")") && !self.at_cmp() && !self.at_affine_op() {
                        return Ok(p);
                    }
                }
                // too deep is too deep either way: say so
                Err(e) if e.message.contains(TOO_DEEP) => return Err(e),
                Err(_) => {}
            }
            self.pos = save;
        }
        self.comparison()
    }

    fn at_cmp(&self) -> bool {
        ["=", "==", "!=", "<", "<=", ">", ">="]
            .iter()
            .any(|s| self.is_sym(s))
    }
    fn at_affine_op(&self) -> bool {
        ["+", "-", "*"].iter().any(|s| self.is_sym(s))
    }

    fn comparison(&mut self) -> PResult<Pred> {
        let start = self.span();
        let a = self.affine()?;
        let op = match self.peek() {
            Tok::Sym("=") | Tok::Sym("==") => CmpOp::Eq,
            Tok::Sym("!=") => CmpOp::Ne,
            Tok::Sym("<") => CmpOp::Lt,
            Tok::Sym("<=") => CmpOp::Le,
            Tok::Sym(">") => CmpOp::Gt,
            Tok::Sym(">=") => CmpOp::Ge,
            t => {
                return self.err(format!(
                "expected a comparison (`=`, `!=`, `<`, `<=`, `>`, `>=`) in a predicate, found {}",
                t.describe()
            ))
            }
        };
        self.bump();
        let b = self.affine()?;
        // engines may compare by subtracting: the difference must fit too
        if !a.checked_sub(&b).is_some_and(|d| d.in_index_range()) {
            return Err(self.range_err(start));
        }
        Ok(Pred::Cmp(op, a, b))
    }
}

// ---- names in value position ----
//
// After a function is parsed, a bare name that is not a value (parameter or
// `let`) in scope but an index bound by an enclosing `gen`/`sum` becomes an
// [`Expr::IndexValue`], and one that is a size name of the function an
// [`Expr::SizeValue`] (`docs/language.md`, "Sizes and indices as numbers");
// integer arithmetic on index values folds as it is read (`super::fold`).

/// Names in scope while resolving.
struct Scope<'a> {
    /// Size names of the function (from its parameters' types).
    pub sizes: &'a [String],
    /// Value names (parameters, then `let`s), innermost last.
    pub values: Vec<String>,
    /// Index names bound by `gen`/`sum`, innermost last.
    pub indices: Vec<String>,
}

/// Resolve the names of `e` (with its span tree `sp`) in `scope`.
fn resolve(e: Expr, sp: SpanTree, scope: &mut Scope) -> Result<(Expr, SpanTree), Diagnostic> {
    crate::stack::deep(|| resolve_inner(e, sp, scope))
}

fn resolve_inner(
    e: Expr,
    mut sp: SpanTree,
    scope: &mut Scope,
) -> Result<(Expr, SpanTree), Diagnostic> {
    let mut kids = std::mem::take(&mut sp.children).into_iter();
    let next = |kids: &mut std::vec::IntoIter<SpanTree>| kids.next().unwrap_or_default();
    let r = match e {
        Expr::Var(x) => {
            if scope.values.contains(&x) {
                Expr::Var(x)
            } else if scope.indices.contains(&x) {
                if scope.sizes.contains(&x) {
                    return Err(Diagnostic::new(
                        format!(
                            "`{x}` is both an index and a size name here, so as a number it is ambiguous: rename the index"
                        ),
                        Some(sp.span),
                    ));
                }
                Expr::IndexValue(Affine::var(x))
            } else if scope.sizes.contains(&x) {
                Expr::SizeValue(x)
            } else {
                Expr::Var(x)
            }
        }
        Expr::Bin(op, a, b) => {
            let (a, sa) = resolve(*a, next(&mut kids), scope)?;
            let (b, sb) = resolve(*b, next(&mut kids), scope)?;
            match super::fold::fold_bin(op, &a, &b) {
                Some(f) => f,
                None => {
                    sp.children = vec![sa, sb];
                    Expr::bin(op, a, b)
                }
            }
        }
        Expr::Neg(a) => {
            let (a, sa) = resolve(*a, next(&mut kids), scope)?;
            match a {
                Expr::IndexValue(x) if x.checked_scale(-1).is_some() => {
                    Expr::index_value(x.scale(-1))
                }
                a => {
                    sp.children = vec![sa];
                    Expr::Neg(Box::new(a))
                }
            }
        }
        Expr::Call(f, args) => {
            let mut out = Vec::new();
            for a in args {
                let (a, s) = resolve(a, next(&mut kids), scope)?;
                out.push(a);
                sp.children.push(s);
            }
            Expr::Call(f, out)
        }
        Expr::Pair(a, b) => {
            let (a, sa) = resolve(*a, next(&mut kids), scope)?;
            let (b, sb) = resolve(*b, next(&mut kids), scope)?;
            sp.children = vec![sa, sb];
            Expr::pair(a, b)
        }
        Expr::Proj(k, a) => {
            let (a, sa) = resolve(*a, next(&mut kids), scope)?;
            sp.children = vec![sa];
            Expr::proj(k, a)
        }
        Expr::Access(a, idx) => {
            let (a, sa) = resolve(*a, next(&mut kids), scope)?;
            sp.children = vec![sa];
            Expr::access(a, idx)
        }
        Expr::Gather(a, g, c) => {
            let (a, sa) = resolve(*a, next(&mut kids), scope)?;
            // the integer array is a parameter: never an index or size
            let (g, sg) = resolve(*g, next(&mut kids), scope)?;
            sp.children = vec![sa, sg];
            Expr::gather(a, g, c)
        }
        Expr::Gen(i, n, b) => {
            scope.indices.push(i.clone());
            let r = resolve(*b, next(&mut kids), scope);
            scope.indices.pop();
            let (b, sb) = r?;
            sp.children = vec![sb];
            Expr::gen(i, n, b)
        }
        Expr::Sum(i, n, b) => {
            scope.indices.push(i.clone());
            let r = resolve(*b, next(&mut kids), scope);
            scope.indices.pop();
            let (b, sb) = r?;
            sp.children = vec![sb];
            Expr::sum(i, n, b)
        }
        Expr::Reduce(op, i, n, b) => {
            scope.indices.push(i.clone());
            let r = resolve(*b, next(&mut kids), scope);
            scope.indices.pop();
            let (b, sb) = r?;
            sp.children = vec![sb];
            Expr::Reduce(op, i, n, Box::new(b))
        }
        Expr::Let(x, a, b) => {
            let (a, sa) = resolve(*a, next(&mut kids), scope)?;
            scope.values.push(x.clone());
            let r = resolve(*b, next(&mut kids), scope);
            scope.values.pop();
            let (b, sb) = r?;
            sp.children = vec![sa, sb];
            Expr::let_(x, a, b)
        }
        Expr::Fold(i, n, acc, a, b) => {
            let (a, sa) = resolve(*a, next(&mut kids), scope)?;
            scope.indices.push(i.clone());
            scope.values.push(acc.clone());
            let r = resolve(*b, next(&mut kids), scope);
            scope.values.pop();
            scope.indices.pop();
            let (b, sb) = r?;
            sp.children = vec![sa, sb];
            Expr::fold(i, n, acc, a, b)
        }
        Expr::Where(c, a, b) => {
            let mut spans = Vec::new();
            let c = c.try_map_exprs(&mut |x| {
                let (x, s) = resolve(x.clone(), next(&mut kids), scope)?;
                spans.push(s);
                Ok(x)
            })?;
            let (a, sa) = resolve(*a, next(&mut kids), scope)?;
            let (b, sb) = resolve(*b, next(&mut kids), scope)?;
            spans.push(sa);
            spans.push(sb);
            sp.children = spans;
            Expr::where_(c, a, b)
        }
        e @ (Expr::Num(_)
        | Expr::Bracket(_)
        | Expr::Eps(_)
        | Expr::IndexValue(_)
        | Expr::SizeValue(_)) => e,
    };
    sp.depth = 1 + sp.children.iter().map(|c| c.depth).max().unwrap_or(0);
    Ok((r, sp))
}

/// The error for `name(...)` where `name` is not one of the scalar
/// functions: the closest function's name when it looks misspelt, the
/// program that computes a common one the language does not have.
fn unknown_function(name: &str) -> String {
    let names: Vec<&str> = Func::ALL.iter().map(|f| f.name()).collect();
    let list = names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let written = match name {
        "sigmoid" | "logistic" | "expit" => Some("`1 / (1 + exp(-x))`"),
        "relu" => Some("`max(x, 0)`"),
        "softplus" => Some("`log(1 + exp(x))`"),
        "tan" => Some("`sin(x) / cos(x)`"),
        "sinh" => Some("`(exp(x) - exp(-x)) / 2`"),
        "cosh" => Some("`(exp(x) + exp(-x)) / 2`"),
        "square" | "sqr" => Some("`x * x`"),
        "ln" => Some("`log(x)` (the natural logarithm)"),
        "fabs" => Some("`abs(x)`"),
        "maximum" | "fmax" | "amax" => Some("`max(a, b)`"),
        "minimum" | "fmin" | "amin" => Some("`min(a, b)`"),
        _ => None,
    };
    match written {
        Some(w) => format!(
            "unknown function `{name}`: the language has no `{name}`; write it as {w} (the functions are {list})"
        ),
        None => format!(
            "unknown function `{name}`{} (the functions are {list}; a product is written with `*`)",
            crate::diag::did_you_mean(name, names.iter().copied())
        ),
    }
}

/// Most lexical errors reported for one text (each is blanked out and the
/// text lexed again, so the rest of the file is still read).
const MAX_LEX_ERRORS: usize = 64;

/// Lex the whole text, recovering from errors: a character or number the
/// lexer refuses is reported and read as blanks (byte offsets unchanged).
fn lex_recovering(src: &str) -> (Vec<(Tok, Span)>, Vec<Diagnostic>) {
    let mut errors = Vec::new();
    let mut text: Option<String> = None;
    loop {
        match lex(text.as_deref().unwrap_or(src)) {
            Ok(toks) => return (toks, errors),
            Err(d) => {
                let sp = d.span.unwrap_or_default();
                errors.push(d);
                let t = text.get_or_insert_with(|| src.to_string());
                if errors.len() >= MAX_LEX_ERRORS || sp.end <= sp.start || sp.end > t.len() {
                    return (vec![(Tok::Eof, Span::new(src.len(), src.len()))], errors);
                }
                t.replace_range(sp.start..sp.end, &" ".repeat(sp.end - sp.start));
            }
        }
    }
}

/// Parse a whole file. On failure, returns every syntax error: each
/// character the lexer refuses, and the first error of each function (after
/// one, parsing resumes at the next `fn`).
pub fn parse_program(src: &str) -> Result<Parsed, Vec<Diagnostic>> {
    let (parsed, errors) = parse_program_partial(src);
    if errors.is_empty() {
        Ok(parsed)
    } else {
        Err(errors)
    }
}

/// Parse a whole file as far as it goes: the functions that parsed (with
/// their spans) and every syntax error, in source order. A function with a
/// lexical error reports that error only (what the parser then says about
/// the blanked text would be a consequence of it).
pub fn parse_program_partial(src: &str) -> (Parsed, Vec<Diagnostic>) {
    let (toks, lex_errors) = lex_recovering(src);
    let mut p = Parser {
        src,
        toks,
        pos: 0,
        depth: 0,
        start: 0,
    };
    let mut parsed = Parsed::default();
    let mut errors = Vec::new();
    while !matches!(p.peek(), Tok::Eof) {
        p.depth = 0;
        p.start = p.pos;
        let from = p.span().start;
        match p.function() {
            Ok((f, s)) => {
                parsed.program.functions.push(f);
                parsed.spans.push(s);
            }
            Err(d) => {
                let at = d.span.map_or(from, |s| s.start);
                let after_lex_error = lex_errors
                    .iter()
                    .filter_map(|e| e.span)
                    .any(|s| s.start >= from && s.start <= at);
                if !after_lex_error {
                    errors.push(d);
                }
                // resume at the next `fn` (the one the error stopped at,
                // when it stopped at one: an unfinished function before it)
                if p.pos == p.start || !p.is_kw("fn") {
                    p.bump();
                }
                while !matches!(p.peek(), Tok::Eof) && !p.is_kw("fn") {
                    p.bump();
                }
            }
        }
    }
    errors.extend(lex_errors);
    if errors.is_empty() && parsed.program.functions.is_empty() {
        errors.push(Diagnostic::new(
            "the file holds no function (`fn name(...) = ...`)",
            Some(Span::new(0, 0)),
        ));
    }
    errors.sort_by_key(|d| d.span.map_or(0, |s| s.start));
    (parsed, errors)
}

/// Parse a single expression (for tests, the REPL-like API and rule files).
pub fn parse_expr(src: &str) -> Result<(Expr, SpanTree), Diagnostic> {
    let toks = lex(src)?;
    let mut p = Parser {
        src,
        toks,
        pos: 0,
        depth: 0,
        start: 0,
    };
    let r = p.expr()?;
    if !matches!(p.peek(), Tok::Eof) {
        return p.err(format!(
            "unexpected {} after the expression",
            p.peek().describe()
        ));
    }
    let mut scope = Scope {
        sizes: &[],
        values: Vec::new(),
        indices: Vec::new(),
    };
    resolve(r.0, r.1, &mut scope)
}

/// Parse a type such as `[n,3](R,R)`.
pub fn parse_type(src: &str) -> Result<Type, Diagnostic> {
    let toks = lex(src)?;
    let mut p = Parser {
        src,
        toks,
        pos: 0,
        depth: 0,
        start: 0,
    };
    let t = p.ty()?;
    if !matches!(p.peek(), Tok::Eof) {
        return p.err(format!("unexpected {} after the type", p.peek().describe()));
    }
    Ok(t)
}
