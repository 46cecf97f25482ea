//! Typed views of whole objects: dense, CSR, COO, group-quantized. Each
//! borrows the Reader; the library checks the structure before it hands
//! out the pointers (sparse index bounds, group counts).
use std::ffi::CStr;
use std::os::raw::{c_char, c_void};

use ztensor_sys as sys;

use crate::element::dtype_bytes;
use crate::error::{check, Result};
use crate::reader::Reader;

fn text<'r>(p: *const c_char) -> Option<&'r str> {
    // SAFETY: NULL or a string owned by the reader for 'r.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("\u{fffd}"))
}

fn bytes<'r>(p: *const c_void, n: u64) -> &'r [u8] {
    if p.is_null() || n == 0 {
        return &[];
    }
    // SAFETY: n bytes owned by the reader for 'r.
    unsafe { std::slice::from_raw_parts(p as *const u8, n as usize) }
}

fn width(dtype: Option<&str>) -> u64 {
    dtype.and_then(dtype_bytes).unwrap_or(1) as u64
}

/// Bytes of `n` values of `dtype` with logical type `ty`: x2 for complex,
/// half (rounded up) for f4_e2m1, two values a byte.
fn span_bytes(n: u64, dtype: Option<&str>, ty: Option<&str>) -> u64 {
    match ty {
        Some("complex64") | Some("complex128") => 2 * n * width(dtype),
        Some("f4_e2m1") => n.div_ceil(2),
        _ => n * width(dtype),
    }
}

/// A dense object (`zt_dense_view`).
#[derive(Clone, Copy, Debug)]
pub struct DenseView<'r> {
    /// Whether `data` is the file mapping itself (raw data, map mode).
    pub zero_copy: bool,
    pub elements: u64,
    /// Storage elements in `data` (x2 for complex).
    pub values: u64,
    pub dtype: &'r str,
    pub r#type: Option<&'r str>,
    /// `values` little-endian elements of `dtype`.
    pub data: &'r [u8],
}

impl<'r> DenseView<'r> {
    pub(crate) fn of(r: &'r Reader, object: usize) -> Result<Self> {
        let mut v: sys::zt_dense_info = unsafe { std::mem::zeroed() };
        unsafe { sys::zt_dense_info_init(&mut v) };
        check(unsafe { sys::zt_dense_view(r.raw(), object, &mut v) })?;
        Ok(DenseView {
            zero_copy: v.zero_copy != 0,
            elements: v.elements,
            values: v.values,
            dtype: text(v.dtype).unwrap_or(""),
            r#type: text(v.r#type),
            data: bytes(v.data, v.nbytes),
        })
    }
}

/// A sparse_csr object (`zt_csr_view`): row i holds `values[indptr[i] ..
/// indptr[i+1])` at columns `indices[...]`.
#[derive(Clone, Copy, Debug)]
pub struct CsrView<'r> {
    pub zero_copy: bool,
    pub rows: u64,
    pub cols: u64,
    pub nnz: u64,
    pub values: &'r [u8],
    pub values_dtype: &'r str,
    pub values_type: Option<&'r str>,
    pub indices: &'r [u8],
    pub indices_dtype: &'r str,
    pub indptr: &'r [u8],
    pub indptr_dtype: &'r str,
}

impl<'r> CsrView<'r> {
    pub(crate) fn of(r: &'r Reader, object: usize) -> Result<Self> {
        let mut v: sys::zt_csr_info = unsafe { std::mem::zeroed() };
        unsafe { sys::zt_csr_info_init(&mut v) };
        check(unsafe { sys::zt_csr_view(r.raw(), object, &mut v) })?;
        let values_dtype = text(v.values_dtype);
        let index_dtype = text(v.indices_dtype);
        let indptr_dtype = text(v.indptr_dtype);
        Ok(CsrView {
            zero_copy: v.zero_copy != 0,
            rows: v.rows,
            cols: v.cols,
            nnz: v.nnz,
            values: bytes(v.values, span_bytes(v.nnz, values_dtype, text(v.values_type))),
            values_dtype: values_dtype.unwrap_or(""),
            values_type: text(v.values_type),
            indices: bytes(v.indices, v.nnz * width(index_dtype)),
            indices_dtype: index_dtype.unwrap_or(""),
            indptr: bytes(v.indptr, (v.rows + 1) * width(indptr_dtype)),
            indptr_dtype: indptr_dtype.unwrap_or(""),
        })
    }

    /// The column indices as u64, when stored so (every 1.2.0 file).
    pub fn indices_u64(&self) -> Option<Vec<u64>> {
        (self.indices_dtype == "u64").then(|| le_u64(self.indices))
    }

    /// The row pointers as u64, when stored so.
    pub fn indptr_u64(&self) -> Option<Vec<u64>> {
        (self.indptr_dtype == "u64").then(|| le_u64(self.indptr))
    }
}

/// A sparse_coo object (`zt_coo_view`): entry j at coords[d * nnz + j].
#[derive(Clone, Copy, Debug)]
pub struct CooView<'r> {
    pub zero_copy: bool,
    pub shape: &'r [u64],
    pub nnz: u64,
    pub values: &'r [u8],
    pub values_dtype: &'r str,
    pub values_type: Option<&'r str>,
    pub coords: &'r [u8],
    pub coords_dtype: &'r str,
}

impl<'r> CooView<'r> {
    pub(crate) fn of(r: &'r Reader, object: usize) -> Result<Self> {
        let mut v: sys::zt_coo_info = unsafe { std::mem::zeroed() };
        unsafe { sys::zt_coo_info_init(&mut v) };
        check(unsafe { sys::zt_coo_view(r.raw(), object, &mut v) })?;
        let values_dtype = text(v.values_dtype);
        let coords_dtype = text(v.coords_dtype);
        let shape = if v.shape.is_null() || v.ndim == 0 {
            &[][..]
        } else {
            // SAFETY: ndim values owned by the reader.
            unsafe { std::slice::from_raw_parts(v.shape, v.ndim as usize) }
        };
        Ok(CooView {
            zero_copy: v.zero_copy != 0,
            shape,
            nnz: v.nnz,
            values: bytes(v.values, span_bytes(v.nnz, values_dtype, text(v.values_type))),
            values_dtype: values_dtype.unwrap_or(""),
            values_type: text(v.values_type),
            coords: bytes(v.coords, v.ndim * v.nnz * width(coords_dtype)),
            coords_dtype: coords_dtype.unwrap_or(""),
        })
    }

    /// The coordinates as u64, when stored so.
    pub fn coords_u64(&self) -> Option<Vec<u64>> {
        (self.coords_dtype == "u64").then(|| le_u64(self.coords))
    }
}

/// A quantized_group object (`zt_quant_view`; see ztensor.h for the
/// packing rules).
#[derive(Clone, Copy, Debug)]
pub struct QuantView<'r> {
    pub zero_copy: bool,
    pub bits: u32,
    pub group_size: u64,
    pub n: u64,
    pub k: u64,
    pub groups: u64,
    pub values_per_word: u32,
    pub bitstream: bool,
    pub zeros_packed: bool,
    pub packed_weight: &'r [u8],
    pub packed_weight_dtype: &'r str,
    pub scales: &'r [u8],
    pub scales_dtype: &'r str,
    pub zeros: Option<&'r [u8]>,
    pub zeros_dtype: Option<&'r str>,
}

impl<'r> QuantView<'r> {
    pub(crate) fn of(r: &'r Reader, object: usize) -> Result<Self> {
        let mut v: sys::zt_quant_info = unsafe { std::mem::zeroed() };
        unsafe { sys::zt_quant_info_init(&mut v) };
        check(unsafe { sys::zt_quant_view(r.raw(), object, &mut v) })?;
        let pw = text(v.packed_weight_dtype);
        let sd = text(v.scales_dtype);
        let zd = text(v.zeros_dtype);
        Ok(QuantView {
            zero_copy: v.zero_copy != 0,
            bits: v.bits,
            group_size: v.group_size,
            n: v.n,
            k: v.k,
            groups: v.groups,
            values_per_word: v.values_per_word,
            bitstream: v.bitstream != 0,
            zeros_packed: v.zeros_packed != 0,
            packed_weight: bytes(v.packed_weight, v.packed_weight_count * width(pw)),
            packed_weight_dtype: pw.unwrap_or(""),
            scales: bytes(v.scales, v.scales_count * width(sd)),
            scales_dtype: sd.unwrap_or(""),
            zeros: (!v.zeros.is_null())
                .then(|| bytes(v.zeros, span_bytes(v.zeros_count, zd, text(v.zeros_type)))),
            zeros_dtype: zd,
        })
    }
}

fn le_u64(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}
