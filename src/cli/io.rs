//! Reading arguments for the CLI: `.npy` files (any numeric dtype, converted
//! to f64), numbers, and `NAME.0=…`/`NAME.1=…` components of pair parameters;
//! writing results as `.npy`.

use crate::error::{Error, Result};
use crate::interp::Value;
use ndarray::ArrayD;
use ndarray_npy::{read_npy, write_npy};
use std::collections::BTreeMap;
use std::path::Path;

/// Read a `.npy` file as an f64 array; other numeric dtypes are converted.
pub fn read_array(path: &Path) -> Result<ArrayD<f64>> {
    if !path.exists() {
        return Err(Error::Io(format!("{}: no such file", path.display())));
    }
    macro_rules! try_dtype {
        ($($t:ty),*) => {$(
            if let Ok(a) = read_npy::<_, ArrayD<$t>>(path) {
                return Ok(a.mapv(|x| x as f64));
            }
        )*};
    }
    match read_npy::<_, ArrayD<f64>>(path) {
        Ok(a) => return Ok(a),
        Err(ndarray_npy::ReadNpyError::Io(e)) => {
            return Err(Error::Io(format!("{}: {e}", path.display())))
        }
        Err(_) => {}
    }
    try_dtype!(f32, i64, i32, i16, i8, u64, u32, u16, u8);
    if let Ok(a) = read_npy::<_, ArrayD<bool>>(path) {
        return Ok(a.mapv(|x| if x { 1.0 } else { 0.0 }));
    }
    match read_npy::<_, ArrayD<f64>>(path) {
        Ok(a) => Ok(a),
        Err(e) => Err(Error::Io(format!(
            "{}: not a numeric .npy array ({e})",
            path.display()
        ))),
    }
}

/// Write a value: an array to `path`; a number as a 0-dim array; a pair as
/// `STEM.0.npy` and `STEM.1.npy` (recursively).
pub fn write_value(path: &Path, v: &Value) -> Result<()> {
    match v {
        Value::Real(x) => write_value(path, &Value::Array(ndarray::arr0(*x).into_dyn())),
        Value::Array(a) => write_npy(path, a)
            .map_err(|e| Error::Io(format!("{}: cannot write: {e}", path.display()))),
        Value::Pair(a, b) => {
            let stem = path.with_extension("");
            let s = stem.display().to_string();
            write_value(Path::new(&format!("{s}.0.npy")), a)?;
            write_value(Path::new(&format!("{s}.1.npy")), b)
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
                return Err(Error::Call(format!("argument `{name}` is given twice")));
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
                    "argument `{name}` is given both whole and by components"
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
        let (key, val) = spec.split_once('=').ok_or_else(|| {
            Error::Call(format!(
                "`--arg {spec}`: expected NAME=PATH.npy or NAME=NUMBER"
            ))
        })?;
        let mut parts = key.split('.');
        let name = parts.next().unwrap_or("").trim().to_string();
        if name.is_empty() {
            return Err(Error::Call(format!("`--arg {spec}`: the name is missing")));
        }
        let mut path = Vec::new();
        for p in parts {
            match p {
                "0" => path.push(0u8),
                "1" => path.push(1u8),
                _ => {
                    return Err(Error::Call(format!(
                        "`--arg {spec}`: a component after `.` must be 0 or 1"
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
