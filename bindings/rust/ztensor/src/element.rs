//! Rust element types and the dtypes that store them.

// Components hold little-endian bytes, which `Component::as_slice` views
// in place as `&[T]` and `Writer::add_dense` writes from `&[T]` as they lie
// in memory: only right on a little-endian target.
#[cfg(target_endian = "big")]
compile_error!(
    "ztensor views and writes numbers in place as little-endian bytes: big-endian targets are not supported"
);

/// A plain number type that a component's bytes can be viewed as (and
/// that [`crate::Writer::add_dense`] writes from memory as they lie).
///
/// # Safety
/// An implementing type must be plain old data, exactly:
/// - every bit pattern of `size_of::<Self>()` bytes is a valid value
///   (bytes of a file are read as `&[Self]`);
/// - it has no padding bytes, nor any other uninitialised byte (its values
///   are read back as `&[u8]` to be written);
/// - its size is not zero, and its layout is that of the little-endian
///   element of every dtype in [`Element::DTYPES`] (the same size; no
///   pointers, references or interior mutability).
pub unsafe trait Element: Copy + 'static {
    /// The dtypes stored as this type; the first is the one written.
    const DTYPES: &'static [&'static str];
}

macro_rules! element {
    ($($t:ty => [$($d:literal),+]),* $(,)?) => {
        $(unsafe impl Element for $t { const DTYPES: &'static [&'static str] = &[$($d),+]; })*
    };
}

element!(
    f32 => ["f32"], f64 => ["f64"],
    i8 => ["i8"], i16 => ["i16"], i32 => ["i32"], i64 => ["i64"],
    u8 => ["u8", "bool"], u16 => ["u16", "f16", "bf16"], u32 => ["u32"], u64 => ["u64"],
);

/// Bytes per element of a storage dtype.
pub(crate) fn dtype_bytes(dtype: &str) -> Option<usize> {
    Some(match dtype {
        "u8" | "i8" | "bool" => 1,
        "u16" | "i16" | "f16" | "bf16" => 2,
        "u32" | "i32" | "f32" => 4,
        "u64" | "i64" | "f64" => 8,
        _ => return None,
    })
}
