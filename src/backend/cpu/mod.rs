//! The CPU backend: host storage, a caching allocator for large buffers, and strided walks.
//! Each op's CPU kernel lives beside the op, in `ops/<family>/cpu.rs`.

pub(crate) mod parallel;
pub(crate) mod strided;
pub(crate) mod vmath;
