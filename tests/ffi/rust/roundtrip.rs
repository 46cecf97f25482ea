//! A Rust consumer of the installed libztensor.so, through the C ABI alone:
//! `extern "C"` declarations, `#[link(name = "ztensor")]`, no crates. Built
//! with plain rustc as a libtest binary (see run.sh):
//!
//!   rustc --edition 2021 --test roundtrip.rs -L native=$(pkg-config --variable=libdir zt)
//!
//! It writes a file through the writer calls, reopens it and checks names,
//! formats, shapes, dtypes and values, then checks that errors come back as
//! status codes with a message.

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_void};
use std::path::PathBuf;

// ---------------------------------------------------------------------------
// The C ABI (include/ztensor.h), the part this test uses.

#[allow(non_camel_case_types)]
#[repr(C)]
pub struct zt_reader {
    _opaque: [u8; 0],
}

#[allow(non_camel_case_types)]
#[repr(C)]
pub struct zt_writer {
    _opaque: [u8; 0],
}

/// `zt_status` is a C enum: an int on every ABI we build for.
#[allow(non_camel_case_types)]
type zt_status = i32;

const ZT_OK: zt_status = 0;
const ZT_ERR_IO: zt_status = 1;
const ZT_ERR_INVALID: zt_status = 3;
const ZT_ERR_NOT_FOUND: zt_status = 7;
const ZT_ERR_ARGUMENT: zt_status = 8;

#[link(name = "ztensor")]
extern "C" {
    fn zt_status_name(s: zt_status) -> *const c_char;
    fn zt_last_error() -> *const c_char;
    fn zt_version() -> *const c_char;

    fn zt_open(path: *const c_char, out: *mut *mut zt_reader) -> zt_status;
    fn zt_close(r: *mut zt_reader);
    fn zt_file_version(r: *const zt_reader) -> *const c_char;
    fn zt_object_count(r: *const zt_reader) -> usize;
    fn zt_object_name(r: *const zt_reader, i: usize) -> *const c_char;
    fn zt_object_find(r: *const zt_reader, name: *const c_char, index: *mut usize) -> zt_status;
    fn zt_object_format(r: *const zt_reader, i: usize) -> *const c_char;
    fn zt_object_shape(r: *const zt_reader, i: usize, ndim: *mut usize) -> *const u64;
    fn zt_component_count(r: *const zt_reader, object: usize) -> usize;
    fn zt_component_role(r: *const zt_reader, object: usize, k: usize) -> *const c_char;
    fn zt_component_dtype(r: *const zt_reader, object: usize, role: *const c_char)
        -> *const c_char;
    fn zt_component_encoding(
        r: *const zt_reader,
        object: usize,
        role: *const c_char,
    ) -> *const c_char;
    fn zt_component_map(
        r: *const zt_reader,
        object: usize,
        role: *const c_char,
        data: *mut *const c_void,
        nbytes: *mut u64,
    ) -> zt_status;
    fn zt_component_read(
        r: *const zt_reader,
        object: usize,
        role: *const c_char,
        dst: *mut c_void,
        capacity: u64,
        written: *mut u64,
    ) -> zt_status;
    fn zt_verify(r: *const zt_reader, checked: *mut u64, unchecked: *mut u64) -> zt_status;

    fn zt_writer_open(path: *const c_char, out: *mut *mut zt_writer) -> zt_status;
    fn zt_writer_add_dense(
        w: *mut zt_writer,
        name: *const c_char,
        dtype: *const c_char,
        shape: *const u64,
        ndim: usize,
        data: *const c_void,
        nbytes: u64,
        encoding: *const c_char,
    ) -> zt_status;
    fn zt_writer_begin_object(
        w: *mut zt_writer,
        name: *const c_char,
        format: *const c_char,
        shape: *const u64,
        ndim: usize,
    ) -> zt_status;
    fn zt_writer_add_component(
        w: *mut zt_writer,
        role: *const c_char,
        dtype: *const c_char,
        type_: *const c_char,
        data: *const c_void,
        nbytes: u64,
        encoding: *const c_char,
    ) -> zt_status;
    fn zt_writer_end_object(w: *mut zt_writer) -> zt_status;
    fn zt_writer_set_file_attributes_json(w: *mut zt_writer, json: *const c_char) -> zt_status;
    fn zt_writer_finish(w: *mut zt_writer) -> zt_status;
    fn zt_writer_abort(w: *mut zt_writer);
}

// ---------------------------------------------------------------------------
// A thin safe layer, the way a Rust user would wrap the calls.

#[derive(Debug)]
struct Error {
    status: zt_status,
    name: String,
    message: String,
}

fn text(p: *const c_char) -> String {
    assert!(!p.is_null(), "the library returned a NULL string");
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn check(s: zt_status) -> Result<(), Error> {
    if s == ZT_OK {
        return Ok(());
    }
    // Read the message at once: it is valid until the next call in this thread.
    let message = text(unsafe { zt_last_error() });
    Err(Error {
        status: s,
        name: text(unsafe { zt_status_name(s) }),
        message,
    })
}

fn cstr(s: &str) -> CString {
    CString::new(s).expect("no NUL in names")
}

fn as_bytes<T: Copy>(v: &[T]) -> (*const c_void, u64) {
    (v.as_ptr() as *const c_void, std::mem::size_of_val(v) as u64)
}

struct Writer(*mut zt_writer);

impl Writer {
    fn create(path: &PathBuf) -> Result<Writer, Error> {
        let p = cstr(path.to_str().unwrap());
        let mut w = std::ptr::null_mut();
        check(unsafe { zt_writer_open(p.as_ptr(), &mut w) })?;
        Ok(Writer(w))
    }

    fn add_dense<T: Copy>(
        &mut self,
        name: &str,
        dtype: &str,
        shape: &[u64],
        data: &[T],
        encoding: &str,
    ) -> Result<(), Error> {
        let (ptr, n) = as_bytes(data);
        check(unsafe {
            zt_writer_add_dense(
                self.0,
                cstr(name).as_ptr(),
                cstr(dtype).as_ptr(),
                shape.as_ptr(),
                shape.len(),
                ptr,
                n,
                cstr(encoding).as_ptr(),
            )
        })
    }

    fn begin_object(&mut self, name: &str, format: &str, shape: &[u64]) -> Result<(), Error> {
        check(unsafe {
            zt_writer_begin_object(
                self.0,
                cstr(name).as_ptr(),
                cstr(format).as_ptr(),
                shape.as_ptr(),
                shape.len(),
            )
        })
    }

    fn add_component<T: Copy>(&mut self, role: &str, dtype: &str, data: &[T]) -> Result<(), Error> {
        let (ptr, n) = as_bytes(data);
        check(unsafe {
            zt_writer_add_component(
                self.0,
                cstr(role).as_ptr(),
                cstr(dtype).as_ptr(),
                std::ptr::null(),
                ptr,
                n,
                cstr("raw").as_ptr(),
            )
        })
    }

    fn end_object(&mut self) -> Result<(), Error> {
        check(unsafe { zt_writer_end_object(self.0) })
    }

    fn set_file_attributes_json(&mut self, json: &str) -> Result<(), Error> {
        check(unsafe { zt_writer_set_file_attributes_json(self.0, cstr(json).as_ptr()) })
    }

    /// Publishes the file. zt_writer_finish frees the handle either way.
    fn finish(mut self) -> Result<(), Error> {
        let w = std::mem::replace(&mut self.0, std::ptr::null_mut());
        check(unsafe { zt_writer_finish(w) })
    }
}

impl Drop for Writer {
    /// An unfinished writer aborts: nothing appears at the path.
    fn drop(&mut self) {
        unsafe { zt_writer_abort(self.0) }
    }
}

struct Reader(*mut zt_reader);

impl Reader {
    fn open(path: &PathBuf) -> Result<Reader, Error> {
        let p = cstr(path.to_str().unwrap());
        let mut r = std::ptr::null_mut();
        check(unsafe { zt_open(p.as_ptr(), &mut r) })?;
        Ok(Reader(r))
    }

    fn names(&self) -> Vec<String> {
        (0..unsafe { zt_object_count(self.0) })
            .map(|i| text(unsafe { zt_object_name(self.0, i) }))
            .collect()
    }

    fn find(&self, name: &str) -> Result<usize, Error> {
        let mut i = 0usize;
        check(unsafe { zt_object_find(self.0, cstr(name).as_ptr(), &mut i) })?;
        Ok(i)
    }

    fn format(&self, i: usize) -> String {
        text(unsafe { zt_object_format(self.0, i) })
    }

    fn shape(&self, i: usize) -> Vec<u64> {
        let mut ndim = 0usize;
        let p = unsafe { zt_object_shape(self.0, i, &mut ndim) };
        if ndim == 0 {
            return Vec::new();
        }
        unsafe { std::slice::from_raw_parts(p, ndim) }.to_vec()
    }

    fn roles(&self, i: usize) -> Vec<String> {
        (0..unsafe { zt_component_count(self.0, i) })
            .map(|k| text(unsafe { zt_component_role(self.0, i, k) }))
            .collect()
    }

    fn dtype(&self, i: usize, role: &str) -> String {
        text(unsafe { zt_component_dtype(self.0, i, cstr(role).as_ptr()) })
    }

    fn encoding(&self, i: usize, role: &str) -> String {
        text(unsafe { zt_component_encoding(self.0, i, cstr(role).as_ptr()) })
    }

    /// A zero-copy view of a component's decoded elements, borrowed from the
    /// reader (the library keeps the bytes until zt_close, i.e. Drop).
    fn map<T: Copy>(&self, i: usize, role: &str) -> Result<&[T], Error> {
        let mut data: *const c_void = std::ptr::null();
        let mut n = 0u64;
        check(unsafe { zt_component_map(self.0, i, cstr(role).as_ptr(), &mut data, &mut n) })?;
        let size = std::mem::size_of::<T>();
        assert_eq!(n as usize % size, 0, "{} bytes are not whole elements", n);
        assert_eq!(
            data as usize % std::mem::align_of::<T>(),
            0,
            "misaligned data"
        );
        if n == 0 {
            return Ok(&[]);
        }
        Ok(unsafe { std::slice::from_raw_parts(data as *const T, n as usize / size) })
    }

    /// A decoded copy into a Rust buffer.
    fn read<T: Copy + Default>(&self, i: usize, role: &str, count: usize) -> Result<Vec<T>, Error> {
        let mut out = vec![T::default(); count];
        let mut written = 0u64;
        let cap = std::mem::size_of_val(out.as_slice()) as u64;
        check(unsafe {
            zt_component_read(
                self.0,
                i,
                cstr(role).as_ptr(),
                out.as_mut_ptr() as *mut c_void,
                cap,
                &mut written,
            )
        })?;
        assert_eq!(written, cap);
        Ok(out)
    }

    fn verify(&self) -> Result<(u64, u64), Error> {
        let (mut checked, mut unchecked) = (0u64, 0u64);
        check(unsafe { zt_verify(self.0, &mut checked, &mut unchecked) })?;
        Ok((checked, unchecked))
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        unsafe { zt_close(self.0) }
    }
}

// ---------------------------------------------------------------------------
// The tests.

/// A fresh directory per test (tests run on several threads).
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zt-rust-{}-{}", std::process::id(), test));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn write_reopen_check_shapes_and_values() {
    let dir = scratch("roundtrip");
    let path = dir.join("model.zt");

    let weight: Vec<f32> = vec![0.5, -1.25, 2.0, 3.5, -0.0, 1e-7];
    let ids: Vec<i64> = (0..1000).map(|i| i * i - 500).collect();
    // [[1, 0, 2], [0, 0, 3]] as CSR
    let values: Vec<f64> = vec![1.0, 2.0, 3.0];
    let indices: Vec<u64> = vec![0, 2, 2];
    let indptr: Vec<u64> = vec![0, 2, 3];

    let mut w = Writer::create(&path).unwrap();
    w.add_dense("layer.weight", "f32", &[2, 3], &weight, "raw")
        .unwrap();
    w.add_dense("ids", "i64", &[10, 100], &ids, "zstd").unwrap();
    w.begin_object("m", "sparse_csr", &[2, 3]).unwrap();
    w.add_component("values", "f64", &values).unwrap();
    w.add_component("indices", "u64", &indices).unwrap();
    w.add_component("indptr", "u64", &indptr).unwrap();
    w.end_object().unwrap();
    w.set_file_attributes_json(r#"{"producer": "rust"}"#)
        .unwrap();
    w.finish().unwrap();

    let r = Reader::open(&path).unwrap();
    assert_eq!(text(unsafe { zt_file_version(r.0) }), "1.2.0");
    assert_eq!(r.names(), vec!["layer.weight", "ids", "m"]);

    let wi = r.find("layer.weight").unwrap();
    assert_eq!(r.format(wi), "dense");
    assert_eq!(r.shape(wi), vec![2, 3]);
    assert_eq!(r.dtype(wi, "data"), "f32");
    assert_eq!(r.encoding(wi, "data"), "raw");
    assert_eq!(r.map::<f32>(wi, "data").unwrap(), weight.as_slice());

    let ii = r.find("ids").unwrap();
    assert_eq!(r.shape(ii), vec![10, 100]);
    assert_eq!(r.encoding(ii, "data"), "zstd");
    assert_eq!(r.map::<i64>(ii, "data").unwrap(), ids.as_slice());
    assert_eq!(r.read::<i64>(ii, "data", ids.len()).unwrap(), ids);

    let mi = r.find("m").unwrap();
    assert_eq!(r.format(mi), "sparse_csr");
    assert_eq!(r.roles(mi), vec!["values", "indices", "indptr"]);
    assert_eq!(r.map::<f64>(mi, "values").unwrap(), values.as_slice());
    assert_eq!(r.map::<u64>(mi, "indices").unwrap(), indices.as_slice());
    assert_eq!(r.map::<u64>(mi, "indptr").unwrap(), indptr.as_slice());

    assert_eq!(
        r.verify().unwrap(),
        (5, 0),
        "every component carries a digest"
    );
    drop(r);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn errors_are_status_codes_with_a_message() {
    let dir = scratch("errors");

    let e = Reader::open(&dir.join("missing.zt"))
        .err()
        .expect("opened a missing file");
    assert_eq!(e.status, ZT_ERR_IO);
    assert_eq!(e.name, "ZT_ERR_IO");
    assert!(!e.message.is_empty());

    let path = dir.join("f.zt");
    let mut w = Writer::create(&path).unwrap();
    let x: Vec<f32> = vec![1.0, 2.0, 3.0];
    let e = w
        .add_dense("x", "f32", &[2, 2], &x, "raw")
        .err()
        .expect("size mismatch accepted");
    assert_eq!(e.status, ZT_ERR_ARGUMENT, "{:?}", e);
    assert!(e.message.contains("\"x\""), "{:?}", e);
    w.add_dense("x", "f32", &[3], &x, "raw").unwrap();

    w.begin_object("bad", "sparse_csr", &[2, 2]).unwrap();
    w.add_component("values", "f32", &x[..2]).unwrap();
    w.add_component("indices", "u64", &[0u64, 7]).unwrap(); // column 7 of 2
    w.add_component("indptr", "u64", &[0u64, 1, 2]).unwrap();
    let e = w
        .end_object()
        .err()
        .expect("a column out of range was accepted");
    assert_eq!(e.status, ZT_ERR_INVALID, "{:?}", e);
    w.finish().unwrap();

    let r = Reader::open(&path).unwrap();
    assert_eq!(r.names(), vec!["x"]);
    let e = r
        .find("bad")
        .err()
        .expect("a refused object is in the file");
    assert_eq!(e.status, ZT_ERR_NOT_FOUND);
    drop(r);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unfinished_writer_leaves_nothing() {
    let dir = scratch("abort");
    let path = dir.join("never.zt");
    {
        let mut w = Writer::create(&path).unwrap();
        w.add_dense("x", "u8", &[3], &[1u8, 2, 3], "raw").unwrap();
    } // dropped: zt_writer_abort
    assert!(!path.exists());
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "a temporary file was left"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_library_reports_its_version() {
    assert_eq!(text(unsafe { zt_version() }).split('.').count(), 3);
}
