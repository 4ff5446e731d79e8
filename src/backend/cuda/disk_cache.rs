//! Compiled kernels on disk, so a process does not pay NVRTC again for a kernel file another
//! process (or `scripts/gpu-check.sh build`) already compiled.
//!
//! Each entry is one kernel file compiled for one architecture, stored under a key that hashes
//! (with a stable 128-bit hash, the same on every machine and Rust version) everything the
//! output depends on: NVRTC's version, the architecture, the compile options, the common header,
//! the file's name and its source. An entry is used only when its key matches and its contents
//! check out (format, length, checksum, an ELF image for `sm_XY`, NUL-terminated PTX for
//! `compute_XY`); anything else is ignored and compiled afresh, never trusted.
//!
//! The folder is `$DEVTYPE_KERNEL_CACHE` when set (`off` turns the cache off), else
//! `$XDG_CACHE_HOME/devtype/kernels` or `~/.cache/devtype/kernels`. Entries are written to a
//! temporary file and renamed into place, so concurrent processes never read half an entry.
//! Failing to read or write the cache is never an error: the kernels are compiled instead.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The first line of every entry; a new format gets a new version.
const MAGIC: &[u8] = b"devtype-kernel-cache v1\n";

/// The environment variable naming the cache folder.
pub(crate) const ENV: &str = "DEVTYPE_KERNEL_CACHE";

/// What a cache entry depends on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyParts<'a> {
    /// NVRTC's `(major, minor)` version.
    pub(crate) nvrtc: (i32, i32),
    /// `sm_90` or `compute_90`.
    pub(crate) arch: &'a str,
    /// Every compile option besides the architecture.
    pub(crate) options: &'a [&'a str],
    /// The text of `common.cuh`.
    pub(crate) header: &'a str,
    /// The kernel file's name.
    pub(crate) file: &'a str,
    /// The kernel file's text.
    pub(crate) source: &'a str,
}

/// 64-bit FNV-1a from `basis`: stable across machines, Rust versions and runs (unlike
/// `std`'s `DefaultHasher`, whose output may change between releases).
fn fnv1a(basis: u64, bytes: &[u8]) -> u64 {
    let mut h = basis;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A 128-bit hash of `bytes` as 32 hex digits: FNV-1a from two bases.
fn hash128(bytes: &[u8]) -> String {
    let a = fnv1a(0xcbf2_9ce4_8422_2325, bytes);
    let b = fnv1a(0x6c62_272e_07bb_0142, bytes);
    format!("{a:016x}{b:016x}")
}

impl KeyParts<'_> {
    /// The key: a hash of every part, each prefixed by its length so that no two different
    /// sets of parts serialise to the same bytes.
    pub(crate) fn key(&self) -> String {
        let mut bytes = Vec::with_capacity(self.source.len() + self.header.len() + 256);
        let mut field = |b: &[u8]| {
            bytes.extend_from_slice(&(b.len() as u64).to_le_bytes());
            bytes.extend_from_slice(b);
        };
        field(MAGIC);
        field(&self.nvrtc.0.to_le_bytes());
        field(&self.nvrtc.1.to_le_bytes());
        field(self.arch.as_bytes());
        field(&(self.options.len() as u64).to_le_bytes());
        for o in self.options {
            field(o.as_bytes());
        }
        field(self.header.as_bytes());
        field(self.file.as_bytes());
        field(self.source.as_bytes());
        hash128(&bytes)
    }

    /// The entry's file name: readable, and unique per key.
    fn file_name(&self) -> String {
        let stem = self.file.strip_suffix(".cu").unwrap_or(self.file);
        let stem: String = stem
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let ext = if self.arch.starts_with("sm_") {
            "cubin"
        } else {
            "ptx"
        };
        format!("{stem}-{}-{}.{ext}", self.arch, self.key())
    }
}

/// The cache folder from the environment variable's value and the home folders; `None` when
/// the cache is off or no folder is known.
pub(crate) fn dir_from(
    var: Option<OsString>,
    xdg_cache: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    match var {
        Some(v) if v == "off" || v == "0" => None,
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => {
            let base = match (xdg_cache, home) {
                (Some(x), _) if !x.is_empty() => PathBuf::from(x),
                (_, Some(h)) if !h.is_empty() => PathBuf::from(h).join(".cache"),
                _ => return None,
            };
            Some(base.join("devtype").join("kernels"))
        }
    }
}

/// The cache folder of this process (see the module's documentation).
pub(crate) fn dir() -> Option<PathBuf> {
    if cfg!(miri) {
        return None;
    }
    dir_from(
        std::env::var_os(ENV),
        std::env::var_os("XDG_CACHE_HOME"),
        std::env::var_os("HOME"),
    )
}

/// An entry's bytes: the magic line, `key <hex>`, `len <n>`, `sum <hex>`, a blank line, then
/// the image.
fn encode(key: &str, image: &[u8]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(
        format!("key {key}\nlen {}\nsum {}\n\n", image.len(), hash128(image)).as_bytes(),
    );
    out.extend_from_slice(image);
    out
}

/// Whether `image` looks like what `arch` produces: an ELF CUBIN for `sm_XY`, NUL-terminated
/// PTX text for `compute_XY`.
fn plausible(arch: &str, image: &[u8]) -> bool {
    if arch.starts_with("sm_") {
        image.starts_with(b"\x7fELF")
    } else {
        image.last() == Some(&0) && image.iter().filter(|&&b| b == 0).count() == 1
    }
}

/// The image in `bytes` when they are a well-formed entry for `key` and `arch`.
fn decode(bytes: &[u8], key: &str, arch: &str) -> Option<Vec<u8>> {
    let rest = bytes.strip_prefix(MAGIC)?;
    let split = rest.windows(2).position(|w| w == b"\n\n")?;
    let header = std::str::from_utf8(&rest[..split]).ok()?;
    let image = &rest[split + 2..];
    let mut lines = header.lines();
    let found_key = lines.next()?.strip_prefix("key ")?;
    let len: usize = lines.next()?.strip_prefix("len ")?.parse().ok()?;
    let sum = lines.next()?.strip_prefix("sum ")?;
    if lines.next().is_some()
        || found_key != key
        || len != image.len()
        || sum != hash128(image)
        || !plausible(arch, image)
    {
        return None;
    }
    Some(image.to_vec())
}

/// The cached image for `parts` in `dir`, when there is a valid one.
pub(crate) fn load_from(dir: &Path, parts: &KeyParts) -> Option<Vec<u8>> {
    let bytes = std::fs::read(dir.join(parts.file_name())).ok()?;
    decode(&bytes, &parts.key(), parts.arch)
}

/// Stores `image` for `parts` in `dir` (created when missing): written to a temporary file in
/// the same folder, then renamed over the entry, so readers see the old entry or the new one.
pub(crate) fn store_in(dir: &Path, parts: &KeyParts, image: &[u8]) -> std::io::Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    std::fs::create_dir_all(dir)?;
    let path = dir.join(parts.file_name());
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        parts.file_name(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let written = std::fs::write(&tmp, encode(&parts.key(), image))
        .and_then(|()| std::fs::rename(&tmp, &path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map(|()| path)
}

/// Stores `image` for `parts` in `dir`; failures are ignored (the cache is only an
/// optimisation), but reported once on stderr when `DEVTYPE_KERNEL_CACHE` was set explicitly.
pub(crate) fn store(dir: &Path, parts: &KeyParts, image: &[u8]) {
    if let Err(e) = store_in(dir, parts, image) {
        static WARNED: std::sync::Once = std::sync::Once::new();
        if std::env::var_os(ENV).is_some() {
            WARNED.call_once(|| {
                eprintln!(
                    "devtype: could not write the kernel cache in {}: {e}",
                    dir.display()
                )
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts<'a>(source: &'a str) -> KeyParts<'a> {
        KeyParts {
            nvrtc: (13, 0),
            arch: "sm_90",
            options: &["--std=c++17", "--fmad=false"],
            header: "// common",
            file: "binary.cu",
            source,
        }
    }

    fn cubin() -> Vec<u8> {
        let mut v = b"\x7fELF".to_vec();
        v.extend((0..200u8).map(|i| i.wrapping_mul(7)));
        v
    }

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("devtype-kcache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn the_key_is_stable_and_changes_with_every_part() {
        let base = parts("__global__ void k() {}");
        // A fixed value: the hash must not change between runs, machines or Rust versions,
        // or the cubins shipped in gpu-bin/ would never match.
        assert_eq!(hash128(b""), "cbf29ce4842223256c62272e07bb0142");
        assert_eq!(base.key(), base.key());
        assert_eq!(base.key().len(), 32);
        let changed = [
            KeyParts {
                source: "__global__ void k() { }",
                ..base
            },
            KeyParts {
                header: "// common!",
                ..base
            },
            KeyParts {
                nvrtc: (13, 1),
                ..base
            },
            KeyParts {
                nvrtc: (12, 0),
                ..base
            },
            KeyParts {
                arch: "sm_100",
                ..base
            },
            KeyParts {
                options: &["--std=c++17"],
                ..base
            },
            KeyParts {
                options: &["--std=c++17", "--fmad=true"],
                ..base
            },
            KeyParts {
                file: "unary.cu",
                ..base
            },
        ];
        let mut keys: Vec<String> = changed.iter().map(|p| p.key()).collect();
        keys.push(base.key());
        let n = keys.len();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), n, "two different inputs share a key");
        // Moving text between the header and the source changes the key too.
        let a = KeyParts {
            header: "ab",
            source: "c",
            ..base
        };
        let b = KeyParts {
            header: "a",
            source: "bc",
            ..base
        };
        assert_ne!(a.key(), b.key());
    }

    #[test]
    fn the_folder_comes_from_the_environment() {
        let os = |s: &str| Some(OsString::from(s));
        assert_eq!(
            dir_from(os("/x/k"), os("/c"), os("/h")),
            Some("/x/k".into())
        );
        assert_eq!(dir_from(os("off"), os("/c"), os("/h")), None);
        assert_eq!(dir_from(os("0"), None, os("/h")), None);
        assert_eq!(
            dir_from(None, os("/c"), os("/h")),
            Some("/c/devtype/kernels".into())
        );
        assert_eq!(
            dir_from(os(""), None, os("/h")),
            Some("/h/.cache/devtype/kernels".into())
        );
        assert_eq!(dir_from(None, None, None), None);
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri's isolation has no file system")]
    fn an_entry_round_trips_and_a_changed_source_misses() {
        let dir = temp_dir("round");
        let p = parts("__global__ void k() {}");
        assert_eq!(load_from(&dir, &p), None, "empty cache");
        let path = store_in(&dir, &p, &cubin()).unwrap();
        assert!(path.starts_with(&dir));
        assert_eq!(load_from(&dir, &p), Some(cubin()));
        // The source changed: a different key, so a miss (the old entry stays, unused).
        let q = parts("__global__ void k() { /* new */ }");
        assert_eq!(load_from(&dir, &q), None);
        // No temporary file is left behind.
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri's isolation has no file system")]
    fn corrupt_entries_are_ignored() {
        let dir = temp_dir("corrupt");
        let p = parts("__global__ void k() {}");
        let path = store_in(&dir, &p, &cubin()).unwrap();
        let good = std::fs::read(&path).unwrap();
        let mut bad_entries: Vec<(&str, Vec<u8>)> = Vec::new();
        // One payload byte flipped: the checksum no longer matches.
        let mut flipped = good.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        bad_entries.push(("flipped byte", flipped));
        // Cut short (a crash while writing by some other tool).
        bad_entries.push(("truncated", good[..good.len() - 10].to_vec()));
        bad_entries.push(("header only", good[..MAGIC.len() + 10].to_vec()));
        bad_entries.push(("empty", Vec::new()));
        bad_entries.push(("garbage", b"\x7fELF not an entry at all".to_vec()));
        // Another key's entry renamed to this name.
        let other = parts("other");
        bad_entries.push(("another key", encode(&other.key(), &cubin())));
        // The right key and checksum, but not a CUBIN.
        let text = b"not an elf image".to_vec();
        bad_entries.push(("not ELF", encode(&p.key(), &text)));
        // A length that does not match.
        let mut wrong_len = good.clone();
        wrong_len.extend_from_slice(b"extra");
        bad_entries.push(("trailing bytes", wrong_len));
        for (what, bytes) in bad_entries {
            std::fs::write(&path, &bytes).unwrap();
            assert_eq!(load_from(&dir, &p), None, "{what} was trusted");
        }
        // A folder where the entry should be: ignored too, and storing over it fails cleanly.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        assert_eq!(load_from(&dir, &p), None);
        assert!(store_in(&dir, &p, &cubin()).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn ptx_entries_must_be_nul_terminated_text() {
        assert!(plausible("compute_90", b".version 9.0\0"));
        assert!(!plausible("compute_90", b".version 9.0"));
        assert!(!plausible("compute_90", b".ver\0sion\0"));
        assert!(plausible("sm_90", &cubin()));
        assert!(!plausible("sm_90", b".version 9.0\0"));
    }
}
