//! Rust element types and the dtypes that store them.

/// A plain number type that a component's bytes can be viewed as.
///
/// # Safety
/// Every bit pattern of the type's size is a valid value.
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
