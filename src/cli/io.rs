//! Reading arguments for the CLI: `.npy` files (any numeric dtype, converted
//! to f64), numbers, and `NAME.0=…`/`NAME.1=…` components of pair parameters;
//! writing results as `.npy`.

use crate::error::{Error, Result};
use crate::interp::value::MAX_ELEMENTS;
use crate::interp::Value;
use crate::precision::Precision;
use ndarray::{ArrayD, IxDyn, ShapeBuilder};
use ndarray_npy::write_npy;
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// What the header of a `.npy` file declares.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyHeader {
    /// The dtype, e.g. `<f8`.
    pub descr: String,
    pub fortran_order: bool,
    pub shape: Vec<u64>,
    /// Offset of the data in the file.
    pub data_offset: u64,
}

/// A supported dtype: its kind (`f` float, `i` signed, `u` unsigned, `b`
/// bool), its size in bytes, and whether it is big-endian.
#[derive(Clone, Copy, Debug, PartialEq)]
struct DType {
    kind: char,
    size: usize,
    big_endian: bool,
}

/// The dtype of a `descr` (`<f8`, `>i2`, `|u1`, `|b1`, `?`, ...): float
/// of 2, 4 or 8 bytes, signed and unsigned integers of 1, 2, 4 or 8, and
/// bool; `<` little-endian, `>` big-endian, `=` native, `|` (one byte).
fn dtype(descr: &str) -> Option<DType> {
    let (order, d) = match descr.chars().next()? {
        c @ ('<' | '>' | '|' | '=') => (c, &descr[1..]),
        _ => ('=', descr),
    };
    let big_endian = match order {
        '>' => true,
        '=' => cfg!(target_endian = "big"),
        _ => false,
    };
    let (kind, size) = match d {
        "?" | "b1" => ('b', 1),
        _ => {
            let kind = d.chars().next()?;
            (kind, d[kind.len_utf8()..].parse::<usize>().ok()?)
        }
    };
    let ok = match kind {
        'f' => matches!(size, 2 | 4 | 8),
        'i' | 'u' => matches!(size, 1 | 2 | 4 | 8),
        'b' => size == 1,
        _ => false,
    };
    ok.then_some(DType {
        kind,
        size,
        big_endian,
    })
}

/// An IEEE half-precision number (float16's bits) as f64, exactly.
fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let frac = f64::from(h & 0x3ff);
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        31 if frac == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        e => sign * (1.0 + frac / 1024.0) * 2f64.powi(e - 15),
    }
}

/// One element of dtype `t` from its bytes, as f64 (integers beyond 2^53
/// round to the nearest f64).
fn element(t: DType, b: &[u8]) -> f64 {
    let mut w = [0u8; 8];
    if t.big_endian {
        // the value's bytes, least significant first
        for (k, &x) in b.iter().rev().enumerate() {
            w[k] = x;
        }
    } else {
        w[..t.size].copy_from_slice(b);
    }
    let u = u64::from_le_bytes(w);
    match (t.kind, t.size) {
        ('f', 2) => f16_to_f64(u as u16),
        ('f', 4) => f64::from(f32::from_bits(u as u32)),
        ('f', _) => f64::from_bits(u),
        ('i', n) => {
            // sign-extend from n bytes
            let shift = 64 - 8 * n as u32;
            (((u << shift) as i64) >> shift) as f64
        }
        ('u', _) => u as f64,
        _ => {
            if u != 0 {
                1.0
            } else {
                0.0
            }
        }
    }
}

/// Parse the header of a `.npy` file (magic, version, the header dict)
/// without trusting it: nothing is allocated from its numbers.
pub fn read_npy_header(r: &mut impl Read) -> std::result::Result<NpyHeader, String> {
    let mut pre = [0u8; 8];
    r.read_exact(&mut pre)
        .map_err(|_| "not a .npy file (shorter than its magic string)".to_string())?;
    if &pre[..6] != b"\x93NUMPY" {
        return Err("not a .npy file (no `\\x93NUMPY` magic string)".into());
    }
    let (len, offset) = match pre[6] {
        1 => {
            let mut b = [0u8; 2];
            r.read_exact(&mut b).map_err(|_| "truncated .npy header")?;
            (u16::from_le_bytes(b) as u64, 10)
        }
        2 | 3 => {
            let mut b = [0u8; 4];
            r.read_exact(&mut b).map_err(|_| "truncated .npy header")?;
            (u32::from_le_bytes(b) as u64, 12)
        }
        v => return Err(format!("unsupported .npy format version {v}")),
    };
    if len > 1 << 20 {
        return Err(format!(
            "the .npy header claims {len} bytes (at most 1 MiB)"
        ));
    }
    let mut text = Vec::new();
    r.take(len)
        .read_to_end(&mut text)
        .map_err(|e| format!("reading the .npy header: {e}"))?;
    if text.len() as u64 != len {
        return Err("truncated .npy header".into());
    }
    let text = String::from_utf8(text).map_err(|_| "the .npy header is not text".to_string())?;
    let field = |key: &str| -> std::result::Result<&str, String> {
        let k = text
            .find(&format!("'{key}'"))
            .or_else(|| text.find(&format!("\"{key}\"")))
            .ok_or_else(|| format!("the .npy header has no `{key}`"))?;
        let rest = &text[k + key.len() + 2..];
        let rest = rest.trim_start();
        let rest = rest
            .strip_prefix(':')
            .ok_or_else(|| format!("malformed .npy header at `{key}`"))?;
        Ok(rest.trim_start())
    };
    let d = field("descr")?;
    let q = d
        .chars()
        .next()
        .filter(|c| *c == '\'' || *c == '"')
        .ok_or("a structured dtype (only plain numeric arrays are read)")?;
    let end = d[1..]
        .find(q)
        .ok_or("malformed `descr` in the .npy header")?;
    let descr = d[1..1 + end].to_string();
    let f = field("fortran_order")?;
    let fortran_order = if f.starts_with("True") {
        true
    } else if f.starts_with("False") {
        false
    } else {
        return Err("malformed `fortran_order` in the .npy header".into());
    };
    let sh = field("shape")?;
    let close = sh.find(')').ok_or("malformed `shape` in the .npy header")?;
    let inner = sh
        .strip_prefix('(')
        .ok_or("malformed `shape` in the .npy header")?;
    let mut shape = Vec::new();
    for part in inner[..close - 1].split(',') {
        let p = part.trim().trim_end_matches('L');
        if p.is_empty() {
            continue;
        }
        shape.push(p.parse::<u64>().map_err(|_| {
            format!(
                "the .npy header's shape has a bad size `{}`",
                crate::diag::quote(p)
            )
        })?);
    }
    Ok(NpyHeader {
        descr,
        fortran_order,
        shape,
        data_offset: offset + len,
    })
}

/// Read a `.npy` file as an f64 array; other numeric dtypes (float16/32,
/// integers, bool; either byte order; C or Fortran order) are converted
/// exactly (integers beyond 2^53 to the nearest f64).
/// The header is checked before anything is allocated: its shape times the
/// item size must match the data the file holds, and the array may have at
/// most 2^31 elements (the tensor limit).
pub fn read_array(path: &Path) -> Result<ArrayD<f64>> {
    let name = crate::diag::quote_path(path);
    let mut file = std::fs::File::open(path).map_err(|e| {
        Error::Io(if e.kind() == std::io::ErrorKind::NotFound {
            format!("{name}: no such file")
        } else {
            format!("{name}: {e}")
        })
    })?;
    let file_len = file
        .metadata()
        .map_err(|e| Error::Io(format!("{name}: {e}")))?
        .len();
    let h = read_npy_header(&mut std::io::BufReader::new(&mut file))
        .map_err(|m| Error::Io(format!("{name}: {m}")))?;
    let t = dtype(&h.descr).ok_or_else(|| {
        Error::Io(format!(
            "{name}: not a numeric .npy array (dtype `{}`; read are float16/32/64, int and uint of 1 to 8 bytes, and bool, in either byte order)",
            crate::diag::quote(&h.descr)
        ))
    })?;
    let itemsize = t.size as u64;
    let mut elements: u128 = 1;
    for &d in &h.shape {
        elements = elements.saturating_mul(d as u128);
    }
    if elements > MAX_ELEMENTS || h.shape.iter().any(|&d| d as u128 > MAX_ELEMENTS) {
        return Err(Error::Io(format!(
            "{name}: the array has shape {:?} ({elements} elements); the limit is {MAX_ELEMENTS} elements and {MAX_ELEMENTS} per axis",
            h.shape
        )));
    }
    let want = elements * itemsize as u128;
    let have = file_len.saturating_sub(h.data_offset) as u128;
    if have != want {
        return Err(Error::Io(format!(
            "{name}: the header declares shape {:?} of dtype `{}`, {want} bytes of data, but the file holds {have}",
            h.shape, crate::diag::quote(&h.descr)
        )));
    }
    file.seek(SeekFrom::Start(h.data_offset))
        .map_err(|e| Error::Io(format!("{name}: {e}")))?;
    let mut r = std::io::BufReader::new(file);
    let n = elements as usize;
    // one buffer allocated fallibly (an array larger than memory is an
    // error, not an abort), the elements converted as they are read
    let mut data: Vec<f64> =
        crate::mem::with_capacity(n, || format!("{name}: the array of shape {:?}", h.shape))?;
    let mut chunk = vec![0u8; t.size * 8192];
    while data.len() < n {
        let k = (n - data.len()).min(8192);
        let bytes = &mut chunk[..k * t.size];
        r.read_exact(bytes)
            .map_err(|e| Error::Io(format!("{name}: reading the data: {e}")))?;
        data.extend(bytes.chunks_exact(t.size).map(|b| element(t, b)));
    }
    let shape: Vec<usize> = h.shape.iter().map(|&d| d as usize).collect();
    let a = if h.fortran_order {
        ArrayD::from_shape_vec(IxDyn(&shape).f(), data)
    } else {
        ArrayD::from_shape_vec(IxDyn(&shape), data)
    };
    a.map_err(|e| Error::Io(format!("{name}: internal shape mismatch: {e}")))
}

/// Write a value: an array to `path`; a number as a 0-dim array; a pair as
/// `STEM.0.npy` and `STEM.1.npy` (recursively). Float64 files.
pub fn write_value(path: &Path, v: &Value) -> Result<()> {
    write_value_in(path, v, Precision::F64)
}

/// [`write_value`] for the result of a run in precision `p`: float32 files
/// in [`Precision::F32`] (its numbers are f32 values, so the conversion is
/// exact), int64/int32 files in the integer formats, float64 ones
/// otherwise.
pub fn write_value_in(path: &Path, v: &Value, p: Precision) -> Result<()> {
    let cannot = |e: ndarray_npy::WriteNpyError| {
        Error::Io(format!(
            "{}: cannot write: {e}",
            crate::diag::quote_path(path)
        ))
    };
    match v {
        Value::Real(x) => write_value_in(path, &Value::Array(ndarray::arr0(*x).into_dyn()), p),
        Value::Array(a) if p == Precision::F32 => {
            write_npy(path, &a.mapv(|x| x as f32)).map_err(cannot)
        }
        Value::Array(a) if p == Precision::I64 => {
            write_npy(path, &a.mapv(|x| x as i64)).map_err(cannot)
        }
        Value::Array(a) if p == Precision::I32 => {
            write_npy(path, &a.mapv(|x| x as i32)).map_err(cannot)
        }
        Value::Array(a) => write_npy(path, a).map_err(cannot),
        Value::Pair(a, b) => {
            let stem = path.with_extension("");
            let s = stem.display().to_string();
            write_value_in(Path::new(&format!("{s}.0.npy")), a, p)?;
            write_value_in(Path::new(&format!("{s}.1.npy")), b, p)
        }
    }
}

enum Slot {
    Leaf(Value),
    Pair(Option<Box<Slot>>, Option<Box<Slot>>),
}

fn insert(slot: &mut Option<Box<Slot>>, path: &[u8], v: Value, name: &str) -> Result<()> {
    match path.split_first() {
        None => {
            if slot.is_some() {
                return Err(Error::Call(format!(
                    "argument `{}` is given twice",
                    crate::diag::quote(name)
                )));
            }
            *slot = Some(Box::new(Slot::Leaf(v)));
            Ok(())
        }
        Some((&k, rest)) => {
            if slot.is_none() {
                *slot = Some(Box::new(Slot::Pair(None, None)));
            }
            match slot.as_deref_mut() {
                Some(Slot::Pair(a, b)) => insert(if k == 0 { a } else { b }, rest, v, name),
                _ => Err(Error::Call(format!(
                    "argument `{}` is given both whole and by components",
                    crate::diag::quote(name)
                ))),
            }
        }
    }
}

fn finish(slot: Slot, name: &str) -> Result<Value> {
    match slot {
        Slot::Leaf(v) => Ok(v),
        Slot::Pair(Some(a), Some(b)) => Ok(Value::pair(
            finish(*a, &format!("{name}.0"))?,
            finish(*b, &format!("{name}.1"))?,
        )),
        Slot::Pair(a, _) => Err(Error::Call(format!(
            "argument `{name}`: component `{name}.{}` is missing",
            if a.is_none() { 0 } else { 1 }
        ))),
    }
}

/// Parse `--arg` strings `NAME=PATH.npy`, `NAME=NUMBER` or `NAME.0.1=…` into
/// named values.
pub fn parse_args(specs: &[String]) -> Result<BTreeMap<String, Value>> {
    let mut slots: BTreeMap<String, Option<Box<Slot>>> = BTreeMap::new();
    for spec in specs {
        let shown = crate::diag::quote(spec);
        let (key, val) = spec.split_once('=').ok_or_else(|| {
            Error::Call(format!(
                "`--arg {shown}`: expected NAME=PATH.npy or NAME=NUMBER"
            ))
        })?;
        let mut parts = key.split('.');
        let name = parts.next().unwrap_or("").trim().to_string();
        if name.is_empty() {
            return Err(Error::Call(format!("`--arg {shown}`: the name is missing")));
        }
        let mut path = Vec::new();
        for p in parts {
            match p {
                "0" => path.push(0u8),
                "1" => path.push(1u8),
                _ => {
                    return Err(Error::Call(format!(
                        "`--arg {shown}`: a component after `.` must be 0 or 1"
                    )))
                }
            }
        }
        let value = match val.trim().parse::<f64>() {
            Ok(x) => Value::Real(x),
            Err(_) => {
                let a = read_array(Path::new(val.trim()))?;
                if a.ndim() == 0 {
                    Value::Real(a[ndarray::IxDyn(&[])])
                } else {
                    Value::Array(a)
                }
            }
        };
        insert(slots.entry(name.clone()).or_default(), &path, value, key)?;
    }
    slots
        .into_iter()
        .map(|(k, s)| {
            let v = finish(*s.expect("inserted"), &k)?;
            Ok((k, v))
        })
        .collect()
}
