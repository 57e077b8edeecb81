//! Register tiles: whether a nest is a dense contraction the tile
//! emitter (`emit::tiles`, whose module doc describes the scheme) takes,
//! and how ([`plan`] → [`TilePlan`]): the lanes' variable and mode, the
//! rows, the tile's shape, panels, reduction blocks, packing, loop domains
//! from brackets, and the two-level form's orientation. Owns these
//! decisions; it must not generate code.

use crate::jit::ir::affine::{coef, conjuncts, solve};
use crate::jit::ir::walk::{factors, interchange_factors};
use crate::jit::ir::{Cond, Layout, LoopProgram, Nest, Scalar, SizeRef};

/// One load (or the output): its buffer and the loop variable of each axis.
#[derive(Clone, Debug)]
pub(crate) struct Access {
    pub(crate) buf: usize,
    pub(crate) ix: Vec<usize>,
}

/// A factor of a product.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Factor {
    Num(f64),
    Load(usize),
}

/// Where the `f64x2` lanes run (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Along a variable of the tile level: register tiles of outputs.
    Tile,
    /// Along a summed variable: vector accumulators, reduced at the end.
    Reduce,
}

/// How a dense nest is emitted.
#[derive(Clone, Debug)]
pub struct TilePlan {
    /// The output first, then every load.
    pub(crate) acc: Vec<Access>,
    /// Factors outside every sum.
    pub(crate) post: Vec<Factor>,
    /// Two levels: the factors between the outer and the inner sum.
    pub(crate) mid: Vec<Factor>,
    /// The factors of the innermost sum.
    pub(crate) inner: Vec<Factor>,
    pub(crate) gens: Vec<(usize, SizeRef)>,
    /// The tile level's variables other than `v` and `w`, in nest order.
    pub(crate) around: Vec<(usize, SizeRef)>,
    /// The innermost sum's loops in execution order (in `Reduce` mode, the
    /// lanes' variable is last).
    pub(crate) red: Vec<(usize, SizeRef)>,
    pub(crate) v_size: SizeRef,
    pub(crate) w_size: Option<SizeRef>,
    /// Whether the nest is `o * sum(..) m * sum(..) f` (else `o * sum(..) f`).
    pub two_level: bool,
    pub mode: Mode,
    /// The variable the lanes run along.
    pub v: usize,
    /// The variable the tile's rows run along.
    pub w: Option<usize>,
    /// The vectors' lanes (2 `f64x2` in `F64`, 4 `f32x4` in `F32`: 16
    /// bytes either way), or 1 (no unit-stride axis to vectorise along).
    pub lanes: usize,
    /// Rows of a register tile.
    pub rows: usize,
    /// Vectors per row of a register tile (`Tile`), or independent
    /// accumulators per row (`Reduce`).
    pub cols: usize,
    /// `Tile` mode with rows: the tile level runs `v` in panels of this
    /// many elements, all rows of a panel before the next (so the panel of
    /// the factors along `v` stays in cache); 0 for none.
    pub panel: usize,
    /// `Tile` mode, one level, one summed variable: the reduction runs in
    /// blocks of this many terms (0: one block), every tile of a panel
    /// per block, the partial sums kept in the output between blocks, so
    /// the rows of the second factor a block reads stay in cache (and in
    /// the TLB) for all the rows of the first; see `TileEmitter::tiles_g`.
    pub kblock: usize,
    /// The innermost loop's body is unrolled this many times (the same
    /// accumulators, so the same sums).
    pub unroll: usize,
    /// A loop domain from brackets of the inner product (`Reduce` mode,
    /// one summed variable `v`, rows along `w`): `v < c * w + k` for each
    /// `(c, k)`. Terms outside it are strong zeros, so they are skipped
    /// (the nest then has no factors outside the sum, which could
    /// otherwise meet a strong-zero sum); see `TileEmitter::tile_r`.
    pub hi: Vec<(i64, i64)>,
    /// A loop domain from brackets of the inner product in `Tile` mode
    /// (one level, one summed variable `k`, nothing outside the sum):
    /// `(true, c, d)` is `k >= c * v + d`, `(false, c, d)` is
    /// `k < c * v + d`. A tile runs the sum over the union of its
    /// outputs' domains, with each lane's update masked outside its own
    /// (a masked lane keeps its accumulator bit for bit), and unmasked
    /// where every lane's domain holds; see `TileEmitter::tile`.
    pub tdom: Vec<(bool, i64, i64)>,
    /// Packing (see [`Pack`]).
    pub pack: Option<Pack>,
    /// `Reduce` mode with no rows and several summed variables: an inner
    /// load that walks across memory along `v` (`B[j,i]` in
    /// `sum(i,j) A[i,j] * B[j,i]`, unit-stride along another summed
    /// variable). The summed axis `v` then runs in blocks of [`VBLOCK`],
    /// each block over every value of the other summed variables, where at
    /// call time that load's rows along `v` alias in the L1 cache or are
    /// more than `schedule::TILE_ROWS` (see `TileEmitter::tile_r`).
    pub vblock: Option<usize>,
}

/// `Tile` mode, one level, one summed variable `k`, rows along `w`, in
/// k-blocks: the inner product's factor along `(w, k)` (not `v`), `a`,
/// and its factor along `(v, k)` (not `w`), `b`, are copied into stack
/// buffers before the register tiles read them (the GotoBLAS scheme).
/// Per panel of `v` and block of `k`, the full-width column strips of `b`
/// go to `[strip][k][nr]` (`nr = cols * lanes`; the narrower tail
/// columns read `b` in place); per row tile and block, `a`'s rows go to
/// `[k][rows]`. The tiles then read both at unit stride from two
/// pointers, whatever the layout of the arguments (a power-of-two row
/// stride no longer thrashes cache sets, and a tile needs no pointer per
/// row). The values and the order of the operations are the same as
/// without packing.
#[derive(Clone, Copy, Debug)]
pub struct Pack {
    pub a: usize,
    pub b: usize,
}

type SumChain<'a> = (Vec<(usize, SizeRef)>, &'a Scalar);

/// A product split into its factors and at most one chain of sums; its
/// brackets go to `brs`.
fn split<'a>(
    s: &'a Scalar,
    acc: &mut Vec<Access>,
    brs: &mut Vec<Cond>,
) -> Option<(Vec<Factor>, Option<SumChain<'a>>)> {
    let mut fs = Vec::new();
    factors(s, &mut fs);
    let mut items = Vec::new();
    let mut sum = None;
    for f in fs {
        match f {
            Scalar::Num(x) => items.push(Factor::Num(*x)),
            Scalar::Bracket(p) => brs.push(p.clone()),
            Scalar::Load(b, ixs) => {
                let mut ix = Vec::with_capacity(ixs.len());
                for i in ixs {
                    match (i.checked, i.aff.constant, i.aff.terms.as_slice()) {
                        (false, 0, [(v, 1)]) => ix.push(*v),
                        _ => return None,
                    }
                }
                acc.push(Access { buf: *b, ix });
                items.push(Factor::Load(acc.len() - 1));
            }
            Scalar::Sum(..) => {
                if sum.is_some() {
                    return None;
                }
                let mut vars = Vec::new();
                let mut cur = f;
                while let Scalar::Sum(v, n, b) = cur {
                    vars.push((*v, n.clone()));
                    cur = b;
                }
                sum = Some((vars, cur));
            }
            _ => return None,
        }
    }
    Some((items, sum))
}

/// The tile-level or summed variable the `f64x2` lanes should run along:
/// `(score, tile mode, position, variable)` of the best candidate (see
/// [`plan`]), `None` when no load is unit-stride along any of them.
fn choose(
    acc: &[Access],
    layout: &Layout,
    tiles: &[(usize, SizeRef)],
    red: &[(usize, SizeRef)],
    mid: &[Factor],
    inner: &[Factor],
    two: bool,
) -> Option<(usize, bool, usize, usize)> {
    let units =
        |items: &[Factor], v: usize| loads(items).filter(|&a| acc[a].unit(v, layout)).count();
    // candidates: (score, tile mode, position)
    let mut best: Option<(usize, bool, usize, usize)> = None;
    let mut consider = |score: usize, tile: bool, pos: usize, v: usize| {
        if score == 0 {
            return;
        }
        let key = (score, tile, pos);
        if best.is_none_or(|(s, t, q, _)| key > (s, t, q)) {
            best = Some((score, tile, pos, v));
        }
    };
    for (pos, (v, _)) in tiles.iter().enumerate() {
        let mut score = 2 * units(inner, *v);
        if two {
            score += units(mid, *v);
        } else if acc[0].unit(*v, layout) {
            score += 1;
        }
        consider(score, true, pos, *v);
    }
    for (pos, (v, _)) in red.iter().enumerate() {
        consider(2 * units(inner, *v), false, pos, *v);
    }
    best
}

/// The factors of `sum(outer) mid * sum(red) inner` regrouped for
/// `sum(red) mid' * sum(outer) inner'` ([`interchange_factors`]): the
/// inner factors that use no variable of `outer` move out, `mid` moves
/// in (numbers stay in).
fn swap_items(
    mid: &[Factor],
    inner: &[Factor],
    outer: &[(usize, SizeRef)],
    acc: &[Access],
) -> (Vec<Factor>, Vec<Factor>) {
    interchange_factors(mid, inner, |it: &Factor| match it {
        Factor::Load(a) => outer.iter().any(|(x, _)| acc[*a].dep(*x)),
        Factor::Num(_) => true,
    })
}

pub(crate) fn loads(items: &[Factor]) -> impl Iterator<Item = usize> + '_ {
    items.iter().filter_map(|i| match i {
        Factor::Load(a) => Some(*a),
        Factor::Num(_) => None,
    })
}

impl Access {
    pub(crate) fn dep(&self, v: usize) -> bool {
        self.ix.contains(&v)
    }
    /// Exactly one axis is indexed by `v`, and it is unit-stride.
    pub(crate) fn unit(&self, v: usize, layout: &Layout) -> bool {
        let mut axes = (0..self.ix.len()).filter(|&k| self.ix[k] == v);
        match (axes.next(), axes.next()) {
            (Some(k), None) => layout.is_unit(self.buf, k),
            _ => false,
        }
    }
}

/// Whether some tile-level variable `w` other than `v` has exactly one
/// inner factor along `(w, k)` (not `v`) and one along `(v, k)` (not `w`),
/// `k` the only summed variable: the shape [`Pack`] takes.
fn packable(
    acc: &[Access],
    inner: &[Factor],
    tiles: &[(usize, SizeRef)],
    red: &[(usize, SizeRef)],
    v: usize,
) -> bool {
    let [(k, _)] = red else { return false };
    let one = |on: usize, off: usize| {
        loads(inner)
            .filter(|&a| acc[a].dep(on) && acc[a].dep(*k) && !acc[a].dep(off))
            .count()
            == 1
    };
    tiles
        .iter()
        .any(|(w, _)| *w != v && one(*w, v) && one(v, *w))
}

/// A nest as a dense contraction: `o.. * sum(outer) mid.. * sum(red)
/// inner..` (`two`), or `o.. * sum(red) inner..`, its factors' accesses
/// (the output first) and the brackets of its inner product.
struct Contraction {
    acc: Vec<Access>,
    post: Vec<Factor>,
    mid: Vec<Factor>,
    inner: Vec<Factor>,
    outer: Vec<(usize, SizeRef)>,
    red: Vec<(usize, SizeRef)>,
    two: bool,
    brs: Vec<Cond>,
}

/// `nest` as a [`Contraction`], when it is one this module handles.
fn contraction(p: &LoopProgram, nest: &Nest) -> Option<Contraction> {
    if p.touches_strong_buffers(nest) {
        return None;
    }
    let out = Access {
        buf: nest.buf,
        ix: nest.vars.iter().map(|v| v.0).collect(),
    };
    if p.bufs.get(nest.buf)?.dims.len() != out.ix.len() {
        return None;
    }
    let mut acc = vec![out];
    let mut brs = Vec::new();
    let (post, s1) = split(&nest.body, &mut acc, &mut brs)?;
    if !brs.is_empty() {
        return None;
    }
    let (k1, b1) = s1?;
    let (items1, s2) = split(b1, &mut acc, &mut brs)?;
    let (mid, inner, outer, red, two) = match s2 {
        None => (vec![], items1, vec![], k1, false),
        Some((k2, b2)) => {
            if !brs.is_empty() {
                return None;
            }
            let (inner, s3) = split(b2, &mut acc, &mut brs)?;
            if s3.is_some() || !brs.is_empty() {
                return None;
            }
            (items1, inner, k1, k2, true)
        }
    };
    // at least one load in the inner product
    loads(&inner).next()?;
    Some(Contraction {
        acc,
        post,
        mid,
        inner,
        outer,
        red,
        two,
        brs,
    })
}

/// Reduction interchange of the two-level form: `sum(k1) m * sum(k2) f`
/// as `sum(k2) m' * sum(k1) f'` when that orientation walks more
/// unit-stride axes (no brackets or strong-zero buffers reach this form,
/// so only the summation order changes).
fn orient(c: &mut Contraction, layout: &Layout) {
    if !c.two {
        return;
    }
    let (m2, i2) = swap_items(&c.mid, &c.inner, &c.outer, &c.acc);
    if loads(&i2).next().is_some()
        && choose(&c.acc, layout, &c.red, &c.outer, &m2, &i2, true).map(|b| b.0)
            > choose(&c.acc, layout, &c.outer, &c.red, &c.mid, &c.inner, true).map(|b| b.0)
    {
        std::mem::swap(&mut c.outer, &mut c.red);
        (c.mid, c.inner) = (m2, i2);
    }
}

/// The lanes: `(mode, variable, lanes)` (see [`choose`]); a product that
/// packs (see [`Pack`]) runs on its unit-stride copies whatever the
/// layout: lanes along the output's unit-stride axis if it has one (so
/// tiles store whole vectors).
fn lanes(
    c: &Contraction,
    tiles: &[(usize, SizeRef)],
    layout: &Layout,
    vl: usize,
) -> Option<(Mode, usize, usize)> {
    let (acc, two) = (&c.acc, c.two);
    let mut best = choose(acc, layout, tiles, &c.red, &c.mid, &c.inner, two);
    let packs = |v: usize| !two && c.brs.is_empty() && packable(acc, &c.inner, tiles, &c.red, v);
    let packed_v = tiles
        .iter()
        .map(|(v, _)| *v)
        .filter(|&v| packs(v))
        .max_by_key(|&v| acc[0].unit(v, layout));
    if let Some(v) = packed_v {
        best = Some((usize::MAX, true, 0, v));
    }
    Some(match best {
        Some((_, true, _, v)) => (Mode::Tile, v, vl),
        Some((_, false, _, v)) => (Mode::Reduce, v, vl),
        None => match tiles.last() {
            Some((v, _)) => (Mode::Tile, *v, 1),
            None => (Mode::Reduce, c.red.last()?.0, 1),
        },
    })
}

/// The rows: the tile-level variable that most factors depend on exactly
/// one of (it, `v`): those are the loads shared across rows or columns.
fn rows_var(c: &Contraction, tiles: &[(usize, SizeRef)], v: usize) -> Option<usize> {
    let mut w: Option<(usize, usize)> = None;
    for (pos, (x, _)) in tiles.iter().enumerate() {
        if *x == v {
            continue;
        }
        let score = loads(&c.inner)
            .filter(|&a| c.acc[a].dep(*x) != c.acc[a].dep(v))
            .count();
        if score > 0 && w.is_none_or(|(s, q)| (score, pos) > (s, q)) {
            w = Some((score, pos));
        }
    }
    w.map(|(_, pos)| tiles[pos].0)
}

/// Loop domains from the brackets: bounds of the summed variable, along
/// the rows (`Reduce`: upper bounds, [`TilePlan::hi`]) or along the lanes
/// (`Tile`: either side, [`TilePlan::tdom`]); `None` when a bracket is
/// not such a bound.
#[allow(clippy::type_complexity)]
fn bracket_domains(
    c: &Contraction,
    mode: Mode,
    v: usize,
    w: Option<usize>,
    lanes: usize,
) -> Option<(Vec<(i64, i64)>, Vec<(bool, i64, i64)>)> {
    let mut hi = Vec::new();
    let mut tdom = Vec::new();
    for p in c.brs.iter().cloned() {
        if c.two || c.red.len() != 1 || !c.post.is_empty() {
            return None;
        }
        let k = c.red[0].0;
        let mut cs = Vec::new();
        conjuncts(p, &mut cs);
        for cj in cs {
            let Cond::Cmp(op, a, b) = cj else { return None };
            let (l, h) = solve(op, &a, &b, k)?;
            match mode {
                Mode::Reduce => {
                    let w = w?;
                    let (None, Some(h)) = (l, h) else {
                        return None;
                    };
                    if h.terms.iter().any(|&(x, c)| x != w && c != 0) {
                        return None;
                    }
                    hi.push((coef(&h, w), h.constant));
                }
                Mode::Tile => {
                    // with no unit-stride axis the general code generator's
                    // exact loop domains do better than masks (and the
                    // masks are written for `f64x2` only)
                    if lanes != 2 {
                        return None;
                    }
                    for (is_lo, b) in [(true, l), (false, h)] {
                        let Some(b) = b else { continue };
                        if b.terms.iter().any(|&(x, c)| x != v && c != 0) {
                            return None;
                        }
                        tdom.push((is_lo, coef(&b, v), b.constant));
                    }
                }
            }
        }
    }
    Some((hi, tdom))
}

/// The register tile and its blocking: `(rows, cols, unroll, panel,
/// kblock, pack)`.
fn tile_shape(
    c: &Contraction,
    mode: Mode,
    (v, w, lanes): (usize, Option<usize>, usize),
    tdom_empty: bool,
) -> (usize, usize, usize, usize, usize, Option<Pack>) {
    let (acc, inner, red) = (&c.acc, &c.inner, &c.red);
    // (rows, columns, unrolling of the innermost loop), by measurement
    // on x86-64 (16 xmm registers: accumulators + loads + a splat)
    // (the same shapes in `F32`: an `f32x4` takes one register, as an
    // `f64x2` does)
    let (rows, cols, unroll) = match (mode, lanes > 1, w.is_some()) {
        (Mode::Tile, true, true) => (4, 2, 2),
        (Mode::Tile, true, false) => (1, 8, 2),
        (Mode::Reduce, true, true) => (4, 2, 2),
        (Mode::Reduce, true, false) => (1, 4, 2),
        (_, _, true) => (2, 4, 1),
        (_, _, false) => (1, 4, 1),
    };
    let panel = if mode == Mode::Tile && w.is_some() && lanes > 1 {
        64
    } else {
        0
    };
    let kblock = if mode == Mode::Tile && !c.two && red.len() == 1 && panel > 0 {
        KBLOCK
    } else {
        0
    };
    let mut pack = None;
    if kblock > 0 && tdom_empty {
        if let (Some(w), [(k, _)]) = (w, red.as_slice()) {
            let (k, w) = (*k, w);
            let find = |on: usize, off: usize| {
                let mut it =
                    loads(inner).filter(|&a| acc[a].dep(on) && acc[a].dep(k) && !acc[a].dep(off));
                match (it.next(), it.next()) {
                    (Some(a), None) => Some(a),
                    _ => None,
                }
            };
            if let (Some(a), Some(b)) = (find(w, v), find(v, w)) {
                pack = Some(Pack { a, b });
            }
        }
    }
    // packed: blocks and panels by measurement (matmul, n = 256 and 1024),
    // the panel a whole number of tiles; the stack buffers take
    // `PACK_KC * (PACK_PANEL + rows) * 8` bytes (132 KiB)
    let (panel, kblock) = match pack {
        Some(_) => (PACK_PANEL / (cols * lanes) * (cols * lanes), PACK_KC),
        None => (panel, kblock),
    };
    (rows, cols, unroll, panel, kblock, pack)
}

/// The plan for `nest` in `F64`, when it is a dense contraction this
/// module handles ([`plan_lanes`] with `f64x2` vectors).
pub fn plan(p: &LoopProgram, nest: &Nest, layout: &Layout) -> Option<TilePlan> {
    plan_lanes(p, nest, layout, 2)
}

/// [`plan`] with vectors of `vl` lanes: 2 (`f64x2`, `Precision::F64`) or
/// 4 (`f32x4`, `Precision::F32`).
pub fn plan_lanes(p: &LoopProgram, nest: &Nest, layout: &Layout, vl: usize) -> Option<TilePlan> {
    let mut c = contraction(p, nest)?;
    let gens = nest.vars.clone();
    orient(&mut c, layout);
    let tiles: Vec<(usize, SizeRef)> = if c.two { c.outer.clone() } else { gens.clone() };
    let (mode, v, lanes) = lanes(&c, &tiles, layout, vl)?;
    let w = rows_var(&c, &tiles, v);
    let size_of = |x: usize| {
        gens.iter()
            .chain(&c.outer)
            .chain(&c.red)
            .find(|(y, _)| *y == x)
            .map(|(_, n)| n.clone())
    };
    let v_size = size_of(v)?;
    let w_size = match w {
        Some(w) => Some(size_of(w)?),
        None => None,
    };
    let around = tiles
        .iter()
        .filter(|(x, _)| *x != v && Some(*x) != w)
        .cloned()
        .collect();
    let (hi, tdom) = bracket_domains(&c, mode, v, w, lanes)?;
    if mode == Mode::Reduce {
        let k = c.red.iter().position(|(x, _)| *x == v)?;
        let last = c.red.remove(k);
        c.red.push(last);
    }
    let (rows, cols, unroll, panel, kblock, pack) =
        tile_shape(&c, mode, (v, w, lanes), tdom.is_empty());
    let (acc, inner, red) = (&c.acc, &c.inner, &c.red);
    let vblock = match (mode, lanes > 1, w) {
        (Mode::Reduce, true, None) if hi.is_empty() && !c.two && red.len() >= 2 => loads(inner)
            .find(|&a| {
                acc[a].dep(v)
                    && !acc[a].unit(v, layout)
                    && red.iter().any(|&(x, _)| x != v && acc[a].unit(x, layout))
            }),
        _ => None,
    };
    let Contraction {
        acc,
        post,
        mid,
        inner,
        red,
        two,
        ..
    } = c;
    Some(TilePlan {
        acc,
        post,
        mid,
        inner,
        gens,
        around,
        red,
        v_size,
        w_size,
        two_level: two,
        mode,
        v,
        w,
        lanes,
        rows,
        cols,
        panel,
        kblock,
        unroll,
        hi,
        pack,
        tdom,
        vblock,
    })
}

/// The default [`TilePlan::kblock`], by measurement (matmul, n = 1024).
pub const KBLOCK: usize = 256;

/// The block of [`TilePlan::vblock`], by measurement
/// (`sum(i,j) A[i,j] * B[j,i]`, 1 thread, in one process against 8, 32,
/// 64, unblocked, and blocks of 64–256 of the other summed variable
/// around them, which did not help): 16 was fastest at n = 256, 1024 and
/// 2048 (2.2–4.4× the unblocked speed), 8 at n = 512 (where 16 still
/// gives 2×).
pub const VBLOCK: i64 = 16;

/// [`TilePlan::kblock`] and (at most) [`TilePlan::panel`] of a plan that packs
/// (see [`Pack`]), by measurement (matmul, n = 256 and 1024, 1 thread).
pub const PACK_KC: usize = 128;

pub const PACK_PANEL: usize = 128;
