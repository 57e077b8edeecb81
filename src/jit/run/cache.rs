//! The global kernel cache: at most [`CACHE_CAPACITY`] kernels keyed by
//! program text and options, least recently used out first. Owns the
//! cache only; it must not compile (`super::compile` does).

use super::jit_err;
use super::kernel::Kernel;
use crate::error::Result;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// How many kernels the global cache keeps (the least recently used goes
/// first).
pub const CACHE_CAPACITY: usize = 256;

#[derive(Default)]
pub(crate) struct Cache {
    map: HashMap<String, (Arc<Kernel>, u64)>,
    clock: u64,
}

impl Cache {
    pub(crate) fn get(&mut self, key: &str) -> Option<Arc<Kernel>> {
        self.clock += 1;
        let now = self.clock;
        self.map.get_mut(key).map(|(k, used)| {
            *used = now;
            k.clone()
        })
    }

    pub(crate) fn insert(&mut self, key: String, k: Arc<Kernel>) -> Arc<Kernel> {
        if let Some(have) = self.get(&key) {
            return have;
        }
        while self.map.len() >= CACHE_CAPACITY {
            let oldest = self
                .map
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(key, _)| key.clone());
            match oldest {
                Some(o) => self.map.remove(&o),
                None => break,
            };
        }
        self.map.insert(key, (k.clone(), self.clock));
        k
    }
}

pub(crate) fn cache() -> Result<std::sync::MutexGuard<'static, Cache>> {
    static C: OnceLock<Mutex<Cache>> = OnceLock::new();
    C.get_or_init(|| Mutex::new(Cache::default()))
        .lock()
        .map_err(|_| jit_err("cache poisoned"))
}

/// The number of kernels in the global cache (at most
/// [`CACHE_CAPACITY`]).
pub fn cache_len() -> usize {
    cache().map(|c| c.map.len()).unwrap_or(0)
}

/// Empty the global cache (kernels held by callers stay alive).
pub fn clear_cache() {
    if let Ok(mut c) = cache() {
        c.map.clear();
    }
}
