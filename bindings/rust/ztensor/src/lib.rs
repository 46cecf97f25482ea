//! Read and write zTensor (.zt) files through libztensor's C ABI: dense,
//! sparse (CSR, COO), group-quantized, FP8 and complex tensors, raw or
//! zstd-compressed, with digests.
//!
//! ```no_run
//! use ztensor::{Encoding, Reader, Writer};
//!
//! let mut w = Writer::create("model.zt")?;
//! w.add_dense("layer.weight", &[2, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], Encoding::Raw)?;
//! w.finish()?;
//!
//! let r = Reader::open("model.zt")?;
//! for object in r.objects() {
//!     println!("{} {} {:?}", object.name(), object.format(), object.shape());
//! }
//! let weight: &[f32] = r.object("layer.weight")?.data()?.as_slice()?; // zero-copy
//! assert_eq!(weight[4], 5.0);
//! # Ok::<(), ztensor::Error>(())
//! ```
//!
//! Lifetimes: everything a [`Reader`] hands out borrows it (names, shapes,
//! byte slices, views), so the compiler rejects any use after the file is
//! closed. A Reader is `Send + Sync`; a [`Writer`] is `Send`. Errors are
//! [`Error`]: the C status and the library's message.
//!
//! [`Reader::open`] maps the file: its zero-copy slices change, or the
//! process dies of SIGBUS, if another process truncates or rewrites the
//! file in place while it is open. Open such files in copy mode
//! ([`OpenOptions`]`::copy`).

mod buffers;
mod element;
mod error;
mod reader;
mod source;
mod views;
mod writer;

pub use element::Element;
pub use error::{Error, Result, Status};
pub use reader::{Component, HttpOptions, Object, OpenOptions, Reader};
pub use source::{ByteSource, SourceOptions};
pub use views::{CooView, CsrView, DenseView, QuantView};
pub use writer::{ComponentWriter, Digest, Encoding, ObjectWriter, Writer, WriterOptions};

/// The linked library's version, "MAJOR.MINOR.PATCH" (`zt_version`).
pub fn version() -> &'static str {
    // SAFETY: a static string.
    unsafe { std::ffi::CStr::from_ptr(ztensor_sys::zt_version()) }
        .to_str()
        .unwrap_or("")
}

/// How many threads "all cores" (`threads = 0`) means in the library's
/// calls: the CPUs this process may run on, bounded by its cgroup's CPU
/// quota, at least 1; found once per process (`zt_cpu_count`).
pub fn cpu_count() -> u32 {
    // SAFETY: no arguments; never fails.
    unsafe { ztensor_sys::zt_cpu_count() }
}
