//! Reading: Reader, Object, Component.
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_void};
use std::path::Path;
use std::ptr::{self, NonNull};
use std::time::Duration;

use ztensor_sys as sys;

use crate::buffers::buffer;
use crate::element::Element;
use crate::error::{argument, check, Error, Result, Status};
use crate::views::{CooView, CsrView, DenseView, QuantView};

/// Options of [`Reader::open_with`].
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// Read with `pread` into owned buffers instead of mapping the file (for
    /// files that may change while open: another process truncating or
    /// rewriting a mapped file changes the slices a mapping reader handed
    /// out, or raises SIGBUS; in copy mode it is `Status::Io`). Views then
    /// point into the reader's buffers.
    pub copy: bool,
    /// Cap on one component's decoded size; 0 = the library's default.
    pub max_decoded_bytes: u64,
    /// Also open .safetensors, .gguf, .npy, .npz, PyTorch and sharded-index
    /// files, read-only (`zt_open_options.allow_foreign`).
    pub allow_foreign: bool,
}

/// Options of [`Reader::open_url`] (`zt_open_url`; docs/remote.md).
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// "Name: value" headers sent with every request.
    pub headers: Vec<String>,
    /// Connect timeout, and the longest a transfer may stall;
    /// `Duration::ZERO` = the library's default (30 s). A non-zero timeout
    /// under 1 ms is 1 ms.
    pub timeout: Duration,
    /// Retries after a 5xx, 429 or a dropped connection.
    pub retries: u32,
    /// Requests in flight at once.
    pub connections: u32,
    /// Fetched ranges kept for reuse; 0 = 64 MiB.
    pub cache_bytes: u64,
    /// Cap on one component's decoded size (`zt_open_options.max_decoded_bytes`);
    /// 0 = the library's default (64 GiB). A read of a component over it
    /// fails with `Status::Limit` before anything is fetched or allocated.
    pub max_decoded_bytes: u64,
    /// Also read .safetensors URLs and sharded safetensors .index.json
    /// URLs (one request to open); other foreign formats are refused.
    pub allow_foreign: bool,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            headers: Vec::new(),
            timeout: Duration::from_secs(30),
            retries: 3,
            connections: 4,
            cache_bytes: 0,
            max_decoded_bytes: 0,
            allow_foreign: false,
        }
    }
}

/// An open .zt file. Everything it hands out (names, shapes, the bytes of
/// [`Component::bytes`], views) borrows it, so none of it can outlive the
/// Reader:
///
/// ```compile_fail,E0597
/// let bytes = {
///     let r = ztensor::Reader::open("model.zt").unwrap();
///     r.object("w").unwrap().component("data").unwrap().bytes().unwrap()
/// }; // `r` is dropped (zt_close) here, while `bytes` still borrows it
/// ```
///
/// A Reader is `Send + Sync`: the C library allows any number of threads to
/// use one reader at once.
pub struct Reader {
    raw: NonNull<sys::zt_reader>,
    // from_bytes: the file's bytes, which the C reader views in place.
    _memory: Option<Box<[u8]>>,
}

// SAFETY: the C ABI documents a zt_reader as usable from many threads at once.
unsafe impl Send for Reader {}
unsafe impl Sync for Reader {}

impl Drop for Reader {
    fn drop(&mut self) {
        // SAFETY: raw came from a successful open and is closed once.
        unsafe { sys::zt_close(self.raw.as_ptr()) }
    }
}

pub(crate) fn cstring(what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| argument(format!("{what} \"{}\" contains a NUL byte", s.escape_debug())))
}

/// What messages may show of a location (`zt_url_for_messages`): an http(s)
/// URL without its user info, query string and fragment; other text as it is.
pub(crate) fn for_messages(location: &CStr) -> CString {
    // SAFETY: a NUL-terminated string; size 0 with a NULL out asks the length.
    let n = unsafe { sys::zt_url_for_messages(location.as_ptr(), ptr::null_mut(), 0) };
    let mut out = vec![0u8; n + 1];
    // SAFETY: out has n + 1 writable bytes; the library writes a NUL-terminated copy.
    unsafe { sys::zt_url_for_messages(location.as_ptr(), out.as_mut_ptr() as *mut c_char, out.len()) };
    out.truncate(n);
    CString::new(out).unwrap_or_default()
}

pub(crate) fn path_cstring(path: &Path) -> Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| argument(format!("path {} contains a NUL byte", path.display())))
}

/// A C string the reader owns, borrowed for the reader's lifetime.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid for `'r`.
unsafe fn text<'r>(p: *const c_char) -> &'r str {
    if p.is_null() {
        return "";
    }
    CStr::from_ptr(p).to_str().unwrap_or("\u{fffd}")
}

pub(crate) fn opened(
    status: sys::zt_status,
    raw: *mut sys::zt_reader,
    memory: Option<Box<[u8]>>,
) -> Result<Reader> {
    check(status)?;
    let raw = NonNull::new(raw).ok_or_else(|| argument("the library returned no reader"))?;
    Ok(Reader { raw, _memory: memory })
}

/// `HttpOptions::timeout` as `zt_open_options.http_timeout_ms`: zero is 0
/// (the library's default, 30 s), any other duration at least 1 ms.
pub(crate) fn timeout_ms(timeout: Duration) -> u32 {
    if timeout.is_zero() {
        0
    } else {
        timeout.as_millis().clamp(1, u32::MAX as u128) as u32
    }
}

impl Reader {
    /// Opens and validates a .zt file of any generation (`zt_open`).
    ///
    /// The file is memory-mapped (`ZT_IO_MAP`): raw components are handed
    /// out as `&[u8]` / `&[T]` slices of the mapping, zero-copy. The
    /// mapping is shared with the file, so those slices are only as stable
    /// as the file: if another process truncates, rewrites or appends to
    /// it in place while it is open, the bytes behind a slice the Reader
    /// handed out may change under it, and touching a page past a new end
    /// of the file raises SIGBUS (the process dies). Open a file that may
    /// change while it is open with [`OpenOptions`]`{ copy: true, .. }`
    /// ([`Reader::open_with`]): data is then read into buffers the Reader
    /// owns, and a changed file is `Status::Io` instead. (Files written by
    /// [`crate::Writer`] are replaced by a rename, which never disturbs an
    /// open mapping.)
    pub fn open(path: impl AsRef<Path>) -> Result<Reader> {
        Reader::open_with(path, &OpenOptions::default())
    }

    /// `zt_open_ex` with options. Without `copy`, the file is mapped, with
    /// the caveat of [`Reader::open`] about files changed while open.
    pub fn open_with(path: impl AsRef<Path>, options: &OpenOptions) -> Result<Reader> {
        let path = path_cstring(path.as_ref())?;
        let mut opt: sys::zt_open_options = unsafe { std::mem::zeroed() };
        // SAFETY: opt is a writable zt_open_options.
        unsafe { sys::zt_open_options_init(&mut opt) };
        opt.io_mode = if options.copy {
            sys::ZT_IO_COPY as u32
        } else {
            sys::ZT_IO_MAP as u32
        };
        opt.max_decoded_bytes = options.max_decoded_bytes;
        opt.allow_foreign = options.allow_foreign as u32;
        let mut raw = ptr::null_mut();
        // SAFETY: valid C string, options and out pointer.
        let s = unsafe { sys::zt_open_ex(path.as_ptr(), &opt, &mut raw) };
        opened(s, raw, None)
    }

    /// Reads a .zt file held in memory; the Reader keeps the bytes.
    pub fn from_bytes(bytes: impl Into<Box<[u8]>>) -> Result<Reader> {
        let bytes: Box<[u8]> = bytes.into();
        let mut raw = ptr::null_mut();
        // SAFETY: the boxed bytes do not move and live as long as the Reader.
        let s = unsafe { sys::zt_open_memory(bytes.as_ptr() as *const c_void, bytes.len(), &mut raw) };
        opened(s, raw, Some(bytes))
    }

    /// Opens an http:// or https:// URL with range requests (`zt_open_url`):
    /// two requests to open, then only the ranges that calls read.
    ///
    /// No message shows a secret: the library's messages name the URL without its
    /// user info, query string and fragment (`zt_url_for_messages`),
    /// and this binding's own (a NUL byte in the URL or in a header) show
    /// neither the URL nor any header's text.
    pub fn open_url(url: &str, options: &HttpOptions) -> Result<Reader> {
        // Not echoed: user info, query and fragment carry passwords, tokens
        // and signatures, and a header is typically "Authorization: ...".
        let url = CString::new(url).map_err(|_| argument("the URL contains a NUL byte"))?;
        if let Some(i) = options.headers.iter().position(|h| h.contains('\0')) {
            return Err(argument(format!(
                "HttpOptions::headers[{i}] contains a NUL byte (its text is not shown)"
            )));
        }
        let headers = CString::new(
            options
                .headers
                .iter()
                .map(|h| format!("{h}\n"))
                .collect::<String>(),
        )
        .map_err(|_| argument("a header contains a NUL byte"))?;
        let mut opt: sys::zt_open_options = unsafe { std::mem::zeroed() };
        // SAFETY: opt is a writable zt_open_options.
        unsafe { sys::zt_open_options_init(&mut opt) };
        opt.cache_bytes = options.cache_bytes;
        opt.max_decoded_bytes = options.max_decoded_bytes;
        opt.http_headers = if options.headers.is_empty() {
            ptr::null()
        } else {
            headers.as_ptr()
        };
        opt.http_timeout_ms = timeout_ms(options.timeout);
        opt.http_retries = options.retries;
        opt.http_connections = options.connections;
        opt.allow_foreign = options.allow_foreign as u32;
        let mut raw = ptr::null_mut();
        // SAFETY: valid C strings (alive across the call), options, out pointer.
        let s = unsafe { sys::zt_open_url(url.as_ptr(), &opt, &mut raw) };
        opened(s, raw, None)
    }

    pub(crate) fn raw(&self) -> *const sys::zt_reader {
        self.raw.as_ptr()
    }

    /// "1.2.0", "1.1.0", "1.0", "0.1.0", "2" ...; "" for a foreign file.
    pub fn file_version(&self) -> &str {
        // SAFETY: owned by the reader until it closes.
        unsafe { text(sys::zt_file_version(self.raw())) }
    }

    /// "zt", or the foreign format ("safetensors", "gguf", ...).
    pub fn file_format(&self) -> &str {
        unsafe { text(sys::zt_file_format(self.raw())) }
    }

    /// The whole manifest as JSON (`zt_manifest_json`), built on the first
    /// call. `Status::NoMemory` when the library could not build it.
    pub fn manifest_json(&self) -> Result<&str> {
        // SAFETY: NULL or a NUL-terminated string owned by the reader until it closes.
        let p = unsafe { sys::zt_manifest_json(self.raw()) };
        if p.is_null() {
            return Err(Error {
                status: Status::NoMemory,
                message: "zt_manifest_json: out of memory building the manifest's JSON".into(),
            });
        }
        Ok(unsafe { text(p) })
    }

    /// The file's attributes as one encoded CBOR map (empty if none).
    pub fn attributes_cbor(&self) -> Result<&[u8]> {
        let (mut p, mut n) = (ptr::null(), 0usize);
        check(unsafe { sys::zt_file_attributes_cbor(self.raw(), &mut p, &mut n) })?;
        Ok(if p.is_null() {
            &[]
        } else {
            unsafe { std::slice::from_raw_parts(p as *const u8, n) }
        })
    }

    /// The number of objects.
    pub fn len(&self) -> usize {
        unsafe { sys::zt_object_count(self.raw()) }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every object, in the file's order.
    pub fn objects(&self) -> impl ExactSizeIterator<Item = Object<'_>> + '_ {
        (0..self.len()).map(move |index| Object { reader: self, index })
    }

    /// The object named `name` (`Status::NotFound` if there is none).
    pub fn object(&self, name: &str) -> Result<Object<'_>> {
        let c = cstring("name", name)?;
        let mut index = 0usize;
        check(unsafe { sys::zt_object_find(self.raw(), c.as_ptr(), &mut index) })?;
        Ok(Object { reader: self, index })
    }

    /// The content digest of a v2 model ("sha256" or "xxh3"): the identity
    /// of its tensors, computed from the manifest (`zt_content_digest`).
    pub fn content_digest(&self, algorithm: &str) -> Result<String> {
        let algorithm = cstring("algorithm", algorithm)?;
        let mut buf = [0 as c_char; sys::ZT_CONTENT_DIGEST_SIZE as usize];
        check(unsafe {
            sys::zt_content_digest(self.raw(), algorithm.as_ptr(), buf.as_mut_ptr(), buf.len())
        })?;
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned())
    }

    /// Deep check (`zt_verify`): every digest and content rule. Returns the
    /// components whose digest was checked, and those without one.
    pub fn verify(&self) -> Result<(u64, u64)> {
        let (mut checked, mut unchecked) = (0u64, 0u64);
        check(unsafe { sys::zt_verify(self.raw(), &mut checked, &mut unchecked) })?;
        Ok((checked, unchecked))
    }
}

/// One object of a file (a tensor: dense, sparse, quantized, ...).
#[derive(Clone, Copy)]
pub struct Object<'r> {
    reader: &'r Reader,
    index: usize,
}

impl<'r> Object<'r> {
    fn raw(&self) -> *const sys::zt_reader {
        self.reader.raw()
    }

    pub fn index(&self) -> usize {
        self.index
    }

    /// The Reader the object belongs to.
    pub(crate) fn reader(&self) -> &'r Reader {
        self.reader
    }

    pub fn name(&self) -> &'r str {
        unsafe { text(sys::zt_object_name(self.raw(), self.index)) }
    }

    /// "dense", "sparse_csr", "sparse_coo", "quantized_group", ...
    pub fn format(&self) -> &'r str {
        unsafe { text(sys::zt_object_format(self.raw(), self.index)) }
    }

    pub fn shape(&self) -> &'r [u64] {
        let mut ndim = 0usize;
        let p = unsafe { sys::zt_object_shape(self.raw(), self.index, &mut ndim) };
        if p.is_null() || ndim == 0 {
            return &[];
        }
        // SAFETY: ndim values owned by the reader.
        unsafe { std::slice::from_raw_parts(p, ndim) }
    }

    /// The object's attributes as one encoded CBOR map (empty if none).
    pub fn attributes_cbor(&self) -> Result<&'r [u8]> {
        let (mut p, mut n) = (ptr::null(), 0usize);
        check(unsafe { sys::zt_object_attributes_cbor(self.raw(), self.index, &mut p, &mut n) })?;
        Ok(if p.is_null() {
            &[]
        } else {
            unsafe { std::slice::from_raw_parts(p as *const u8, n) }
        })
    }

    pub fn components(&self) -> impl ExactSizeIterator<Item = Component<'r>> + '_ {
        let n = unsafe { sys::zt_component_count(self.raw(), self.index) };
        let object = *self;
        (0..n).map(move |k| {
            let role = unsafe { text(sys::zt_component_role(object.raw(), object.index, k)) };
            Component {
                object,
                role: CString::new(role).unwrap_or_default(),
            }
        })
    }

    /// The component `role` ("data", "values", "indices", ...).
    pub fn component(&self, role: &str) -> Result<Component<'r>> {
        let c = cstring("role", role)?;
        // Checked now, so that a missing role fails here.
        let mut n = 0u64;
        check(unsafe { sys::zt_component_stored_size(self.raw(), self.index, c.as_ptr(), &mut n) })?;
        Ok(Component {
            object: *self,
            role: c,
        })
    }

    /// The data component of a dense object.
    pub fn data(&self) -> Result<Component<'r>> {
        self.component("data")
    }

    /// A dense object's data as numbers converted to f32 (`zt_object_read_f32`).
    /// Sized by `zt_object_decode_capacity`: a data component whose decoded
    /// size is over the reader's `max_decoded_bytes`, or values whose f32
    /// bytes are, is `Status::Limit` before anything is allocated; a buffer
    /// the process cannot have is `Status::NoMemory`. An object that is not
    /// dense is the library's refusal (`Status::Argument`), with nothing
    /// allocated.
    pub fn read_f32(&self) -> Result<Vec<f32>> {
        filled(self.dense_values::<f32>()?, |out, cap, written| unsafe {
            sys::zt_object_read_f32(self.raw(), self.index, out, cap, written)
        })
    }

    /// The same converted to f64 (`zt_object_read_f64`).
    pub fn read_f64(&self) -> Result<Vec<f64>> {
        filled(self.dense_values::<f64>()?, |out, cap, written| unsafe {
            sys::zt_object_read_f64(self.raw(), self.index, out, cap, written)
        })
    }

    /// Any object (dense, sparse, quantized) as dense row-major f32 values
    /// (`zt_object_decode_f32`). The output is sized by
    /// `zt_object_decode_capacity`: product(shape) values whose bytes are
    /// over the reader's `max_decoded_bytes` (a sparse object of a few
    /// bytes may claim a shape of 2^40) are `Status::Limit` before anything
    /// is allocated, and so is any component it reads whose decoded size
    /// is over the cap.
    pub fn decode_f32(&self) -> Result<Vec<f32>> {
        filled(self.converted_values::<f32>(None)?, |out, cap, written| unsafe {
            sys::zt_object_decode_f32(self.raw(), self.index, out, cap, written)
        })
    }

    /// Any object as dense row-major f64 values (`zt_object_decode_f64`),
    /// sized and refused as [`Object::decode_f32`].
    pub fn decode_f64(&self) -> Result<Vec<f64>> {
        filled(self.converted_values::<f64>(None)?, |out, cap, written| unsafe {
            sys::zt_object_decode_f64(self.raw(), self.index, out, cap, written)
        })
    }

    /// product(shape) (`zt_object_element_count`).
    pub fn element_count(&self) -> Result<u64> {
        let mut n = 0u64;
        check(unsafe { sys::zt_object_element_count(self.raw(), self.index, &mut n) })?;
        Ok(n)
    }

    /// The values of `T` a conversion writes (`zt_object_decode_capacity`:
    /// the value count, refused with `Status::Limit` when its bytes are over
    /// the reader's cap), after the component `role` (None: every
    /// component) has passed `zt_component_read_size` if the object has it:
    /// a decoded size the file claims beyond the reader's cap is refused
    /// with the read's own status and message. Nothing is allocated before.
    fn converted_values<T>(&self, role: Option<&str>) -> Result<usize> {
        for c in self.components().filter(|c| role.is_none_or(|r| c.role() == r)) {
            c.checked_read_size()?;
        }
        let mut n = 0u64;
        check(unsafe {
            sys::zt_object_decode_capacity(self.raw(), self.index, std::mem::size_of::<T>(), &mut n)
        })?;
        usize::try_from(n).map_err(|_| argument(format!("{} values do not fit in memory", n)))
    }

    /// [`Object::converted_values`] of the data for `zt_object_read_f32/f64`;
    /// 0 for an object that is not dense, whose refusal (`Status::Argument`)
    /// is then the read call's own, with nothing allocated.
    fn dense_values<T>(&self) -> Result<usize> {
        if !self.is_dense() {
            return Ok(0);
        }
        self.converted_values::<T>(Some("data"))
    }

    fn is_dense(&self) -> bool {
        self.format() == "dense"
    }

    /// The box [begin, end) of a dense object, little-endian bytes of its
    /// dtype (`zt_dense_slice`): only the box's bytes are read (the element
    /// width comes from the manifest, not from decoding the data). An
    /// object that is not dense is the library's refusal
    /// (`Status::Argument`), whatever shape it claims: nothing is allocated
    /// for it.
    pub fn slice(&self, begin: &[u64], end: &[u64]) -> Result<Vec<u8>> {
        let values = self.dense_box_values(begin, end)?;
        let bytes = values
            .checked_mul(self.data_element_bytes())
            .ok_or_else(|| argument("box too large"))?;
        self.slice_fits(values)?;
        filled(bytes, |out: *mut u8, cap, written| unsafe {
            sys::zt_dense_slice(
                self.raw(),
                self.index,
                begin.len(),
                begin.as_ptr(),
                end.as_ptr(),
                out as *mut c_void,
                cap,
                written,
            )
        })
    }

    /// The same box converted to f32 (`zt_dense_slice_f32`).
    pub fn slice_f32(&self, begin: &[u64], end: &[u64]) -> Result<Vec<f32>> {
        filled(self.slice_values(begin, end)?, |out, cap, written| unsafe {
            sys::zt_dense_slice_f32(
                self.raw(),
                self.index,
                begin.len(),
                begin.as_ptr(),
                end.as_ptr(),
                out,
                cap,
                written,
            )
        })
    }

    /// The same box converted to f64 (`zt_dense_slice_f64`).
    pub fn slice_f64(&self, begin: &[u64], end: &[u64]) -> Result<Vec<f64>> {
        filled(self.slice_values(begin, end)?, |out, cap, written| unsafe {
            sys::zt_dense_slice_f64(
                self.raw(),
                self.index,
                begin.len(),
                begin.as_ptr(),
                end.as_ptr(),
                out,
                cap,
                written,
            )
        })
    }

    /// The converted values of a box: its elements, x2 for complex data.
    fn slice_values(&self, begin: &[u64], end: &[u64]) -> Result<usize> {
        let values = self.dense_box_values(begin, end)?;
        self.slice_fits(values)?;
        Ok(if self.data_is_complex() {
            values.checked_mul(2).ok_or_else(|| argument("box too large"))?
        } else {
            values
        })
    }

    /// The "data" component's storage dtype and logical type, from the
    /// manifest (`zt_component_dtype`, `zt_component_type`): nothing is
    /// read. Both None when there is no such component (not a dense
    /// object: the slice call then says so).
    fn data_types(&self) -> (Option<&'r str>, Option<&'r str>) {
        let role = c"data".as_ptr();
        let (d, t) = unsafe {
            (
                sys::zt_component_dtype(self.raw(), self.index, role),
                sys::zt_component_type(self.raw(), self.index, role),
            )
        };
        let opt = |p: *const c_char| (!p.is_null()).then(|| unsafe { text(p) });
        (opt(d), opt(t))
    }

    fn data_is_complex(&self) -> bool {
        matches!(self.data_types().1, Some("complex64") | Some("complex128"))
    }

    /// Bytes of one element of the data in a slice's byte form: the
    /// dtype's width (1 if unknown), x2 for complex.
    fn data_element_bytes(&self) -> usize {
        let (dtype, _) = self.data_types();
        let w = dtype.and_then(crate::element::dtype_bytes).unwrap_or(1);
        if self.data_is_complex() {
            2 * w
        } else {
            w
        }
    }

    /// The elements of the box [begin, end) ([`box_values`]); 0 for an
    /// object that is not dense, which the slice call then refuses.
    fn dense_box_values(&self, begin: &[u64], end: &[u64]) -> Result<usize> {
        if !self.is_dense() {
            return Ok(0);
        }
        box_values(self.shape(), begin, end)
    }

    /// Before a slice's buffer of a non-empty box is allocated: data whose
    /// decoded size is over the reader's cap is refused as zt_dense_slice
    /// refuses it (`Status::Limit`, checked from the manifest). Every other
    /// case is left to the slice call itself.
    fn slice_fits(&self, values: usize) -> Result<()> {
        if values == 0 {
            return Ok(());
        }
        match self.component("data").and_then(|c| c.read_size()) {
            Err(e) if e.status == Status::Limit => Err(e),
            _ => Ok(()),
        }
    }

    /// Rows [begin, end) of a dense object along its first dimension, a
    /// view (`zt_dense_rows_map`: the file mapping for raw data, else the
    /// reader's decode cache).
    pub fn rows(&self, begin: u64, end: u64) -> Result<&'r [u8]> {
        let (mut p, mut n) = (ptr::null(), 0u64);
        check(unsafe { sys::zt_dense_rows_map(self.raw(), self.index, begin, end, &mut p, &mut n) })?;
        Ok(if n == 0 {
            &[]
        } else {
            unsafe { std::slice::from_raw_parts(p as *const u8, n as usize) }
        })
    }

    /// The layout as written: a v2 layout id ("zt.sparse_csr/1", ...) or
    /// the 1.x format.
    pub fn layout(&self) -> &'r str {
        unsafe { text(sys::zt_object_layout(self.raw(), self.index)) }
    }

    /// A dense object's data, zero-copy where the file stores it raw.
    pub fn dense(&self) -> Result<DenseView<'r>> {
        DenseView::of(self.reader, self.index)
    }

    pub fn csr(&self) -> Result<CsrView<'r>> {
        CsrView::of(self.reader, self.index)
    }

    pub fn coo(&self) -> Result<CooView<'r>> {
        CooView::of(self.reader, self.index)
    }

    pub fn quant(&self) -> Result<QuantView<'r>> {
        QuantView::of(self.reader, self.index)
    }
}

/// A Vec of `n` values filled by a C call given the buffer, its capacity
/// and where to say how many it wrote; that many long. The buffer is
/// allocated fallibly (`Status::NoMemory`) and not zeroed first: the call
/// writes the values it counts, and nothing of it is read before (the
/// uninitialised capacity is only ever a raw pointer to the C call).
fn filled<T: Element>(
    n: usize,
    call: impl FnOnce(*mut T, u64, *mut u64) -> sys::zt_status,
) -> Result<Vec<T>> {
    let mut out = buffer::<T>(n)?;
    let mut written = 0u64;
    check(call(out.as_mut_ptr(), n as u64, &mut written))?;
    // SAFETY: the capacity is at least n; the library wrote `written`
    // values (never more than the capacity it was given, n), and every
    // bit pattern is a valid Element.
    unsafe { out.set_len((written.min(n as u64)) as usize) };
    Ok(out)
}

/// The elements of the box [begin, end) of an object of `shape`; 0 for a
/// box the library refuses (another rank, reversed, past the shape), whose
/// refusal is then the library's: nothing is allocated from the caller's
/// numbers before they are checked.
fn box_values(shape: &[u64], begin: &[u64], end: &[u64]) -> Result<usize> {
    if begin.len() != end.len() {
        return Err(argument("begin and end have different lengths"));
    }
    let within = begin.len() == shape.len()
        && begin
            .iter()
            .zip(end)
            .zip(shape)
            .all(|((b, e), s)| b <= e && e <= s);
    if !within {
        return Ok(0);
    }
    let mut n: u64 = 1;
    for (b, e) in begin.iter().zip(end) {
        n = n
            .checked_mul(e.saturating_sub(*b))
            .ok_or_else(|| argument("box too large"))?;
    }
    usize::try_from(n).map_err(|_| argument("box too large"))
}

/// One component of an object: its stored blob and what it decodes to.
#[derive(Clone)]
pub struct Component<'r> {
    object: Object<'r>,
    role: CString,
}

impl<'r> Component<'r> {
    fn raw(&self) -> *const sys::zt_reader {
        self.object.raw()
    }

    pub fn role(&self) -> &str {
        self.role.to_str().unwrap_or("\u{fffd}")
    }

    /// The storage dtype: "f32", "bf16", "u8", ...
    pub fn dtype(&self) -> &'r str {
        unsafe {
            text(sys::zt_component_dtype(
                self.raw(),
                self.object.index,
                self.role.as_ptr(),
            ))
        }
    }

    /// The logical type ("f8_e4m3fn", "complex64", ...), if any.
    pub fn r#type(&self) -> Option<&'r str> {
        let p = unsafe { sys::zt_component_type(self.raw(), self.object.index, self.role.as_ptr()) };
        if p.is_null() {
            None
        } else {
            Some(unsafe { text(p) })
        }
    }

    /// The v2 encoding id as written ("zt.zstd-seekable/1"); None for raw
    /// parts and 1.x files.
    pub fn encoding_id(&self) -> Option<&'r str> {
        let p = unsafe { sys::zt_component_encoding_id(self.raw(), self.object.index, self.role.as_ptr()) };
        (!p.is_null()).then(|| unsafe { text(p) })
    }

    /// "raw" or "zstd" (or an unknown encoding's name).
    pub fn encoding(&self) -> &'r str {
        unsafe {
            text(sys::zt_component_encoding(
                self.raw(),
                self.object.index,
                self.role.as_ptr(),
            ))
        }
    }

    /// The v2 shard holding the part, if it is in another file.
    pub fn shard(&self) -> Option<&'r str> {
        let p = unsafe { sys::zt_component_shard(self.raw(), self.object.index, self.role.as_ptr()) };
        (!p.is_null()).then(|| unsafe { text(p) })
    }

    /// Hints that the stored bytes will be read soon (madvise WILLNEED), or
    /// not again (DONTNEED): `zt_prefetch` / `zt_evict`.
    pub fn prefetch(&self) -> Result<()> {
        check(unsafe { sys::zt_prefetch(self.raw(), self.object.index, self.role.as_ptr()) })
    }

    pub fn evict(&self) -> Result<()> {
        check(unsafe { sys::zt_evict(self.raw(), self.object.index, self.role.as_ptr()) })
    }

    pub fn stored_size(&self) -> Result<u64> {
        let mut n = 0u64;
        check(unsafe {
            sys::zt_component_stored_size(self.raw(), self.object.index, self.role.as_ptr(), &mut n)
        })?;
        Ok(n)
    }

    pub fn decoded_size(&self) -> Result<u64> {
        let mut n = 0u64;
        check(unsafe {
            sys::zt_component_decoded_size(self.raw(), self.object.index, self.role.as_ptr(), &mut n)
        })?;
        Ok(n)
    }

    /// The capacity [`Component::read`] needs (`zt_component_read_size`):
    /// the decoded byte count, checked against the reader's
    /// `max_decoded_bytes` as the read checks it (`Status::Limit` over it),
    /// from the manifest alone. `Status::Unsupported` when the size is
    /// known only by decoding ([`Component::bytes`] then sizes it).
    pub fn read_size(&self) -> Result<u64> {
        let mut n = 0u64;
        check(unsafe {
            sys::zt_component_read_size(self.raw(), self.object.index, self.role.as_ptr(), &mut n)
        })?;
        Ok(n)
    }

    /// [`Component::read_size`], None where only decoding tells it.
    pub(crate) fn checked_read_size(&self) -> Result<Option<u64>> {
        match self.read_size() {
            Ok(n) => Ok(Some(n)),
            Err(e) if e.status == Status::Unsupported => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The decoded little-endian bytes (`zt_component_map`): a view of the
    /// file mapping for raw data, else decoded once into the reader's cache.
    /// Borrowed from the Reader: valid, unchanged, as long as it lives.
    pub fn bytes(&self) -> Result<&'r [u8]> {
        let (mut p, mut n) = (ptr::null(), 0u64);
        check(unsafe {
            sys::zt_component_map(self.raw(), self.object.index, self.role.as_ptr(), &mut p, &mut n)
        })?;
        if n == 0 {
            return Ok(&[]);
        }
        // SAFETY: n bytes owned by the reader until zt_close; 'r borrows it.
        Ok(unsafe { std::slice::from_raw_parts(p as *const u8, n as usize) })
    }

    /// The bytes as elements of `T`, which must match the dtype (f32 for
    /// "f32", u16 for "bf16"/"f16" storage, ...).
    pub fn as_slice<T: Element>(&self) -> Result<&'r [T]> {
        let dtype = self.dtype();
        if !T::DTYPES.contains(&dtype) {
            return Err(argument(format!(
                "component \"{}\" of \"{}\" holds {dtype}, not {}",
                self.role(),
                self.object.name(),
                T::DTYPES[0]
            )));
        }
        let bytes = self.bytes()?;
        if bytes.is_empty() {
            // The library's pointer for no bytes need not be aligned for T;
            // an empty slice needs none.
            return Ok(&[]);
        }
        if !bytes.len().is_multiple_of(std::mem::size_of::<T>())
            || !(bytes.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>())
        {
            return Err(argument(format!(
                "component \"{}\": bytes not aligned for {dtype}",
                self.role()
            )));
        }
        // SAFETY: size and alignment checked; every bit pattern is a valid T.
        Ok(unsafe {
            std::slice::from_raw_parts(bytes.as_ptr() as *const T, bytes.len() / std::mem::size_of::<T>())
        })
    }

    /// Decodes into `dst` (no caching); returns the byte count.
    pub fn read(&self, dst: &mut [u8]) -> Result<usize> {
        let mut written = 0u64;
        check(unsafe {
            sys::zt_component_read(
                self.raw(),
                self.object.index,
                self.role.as_ptr(),
                dst.as_mut_ptr() as *mut c_void,
                dst.len() as u64,
                &mut written,
            )
        })?;
        Ok(written as usize)
    }

    /// The decoded bytes in a fresh Vec (`zt_component_read`), sized by
    /// [`Component::read_size`]: a size over the reader's cap is
    /// `Status::Limit` before anything is allocated, a buffer the process
    /// cannot have `Status::NoMemory`. Where the size is known only by
    /// decoding, the bytes of [`Component::bytes`] (decoded into the
    /// reader's cache, bounded by the cap) are copied.
    pub fn to_vec(&self) -> Result<Vec<u8>> {
        let Some(n) = self.checked_read_size()? else {
            let bytes = self.bytes()?;
            let mut out = buffer(bytes.len())?;
            out.extend_from_slice(bytes);
            return Ok(out);
        };
        let n = usize::try_from(n).map_err(|_| argument(format!("{n} bytes do not fit in memory")))?;
        filled(n, |out: *mut u8, cap, written| unsafe {
            sys::zt_component_read(
                self.raw(),
                self.object.index,
                self.role.as_ptr(),
                out as *mut c_void,
                cap,
                written,
            )
        })
    }

    /// The elements converted to f32 (`zt_component_read_f32`), sized as
    /// [`Component::to_vec`] is (`Status::Limit` over the reader's cap,
    /// `Status::NoMemory`; the decoded bytes of [`Component::bytes`] where
    /// only decoding tells their size).
    pub fn read_f32(&self) -> Result<Vec<f32>> {
        filled(self.element_count()?, |out, cap, written| unsafe {
            sys::zt_component_read_f32(
                self.raw(),
                self.object.index,
                self.role.as_ptr(),
                out,
                cap,
                written,
            )
        })
    }

    /// The elements converted to f64 (`zt_component_read_f64`).
    pub fn read_f64(&self) -> Result<Vec<f64>> {
        filled(self.element_count()?, |out, cap, written| unsafe {
            sys::zt_component_read_f64(
                self.raw(),
                self.object.index,
                self.role.as_ptr(),
                out,
                cap,
                written,
            )
        })
    }

    /// Values the conversions write: storage elements in the decoded bytes
    /// (two make a complex value), two a byte for f4_e2m1. The decoded
    /// size is the read's (over the cap: `Status::Limit`), or where only
    /// decoding tells it, the length of the mapped bytes.
    fn element_count(&self) -> Result<usize> {
        let decoded = match self.checked_read_size()? {
            Some(n) => n,
            None => self.bytes()?.len() as u64,
        };
        let width = crate::element::dtype_bytes(self.dtype()).unwrap_or(1) as u64;
        let per_byte = if self.r#type() == Some("f4_e2m1") { 2 } else { 1 };
        (decoded / width)
            .checked_mul(per_byte)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| argument(format!("{decoded} decoded bytes do not fit in memory")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_timeout_is_the_librarys_default() {
        // Duration::ZERO became 1 ms; the header's 0 is the default, 30 s.
        assert_eq!(timeout_ms(Duration::ZERO), 0);
        assert_eq!(timeout_ms(Duration::from_micros(1)), 1);
        assert_eq!(timeout_ms(Duration::from_millis(2500)), 2500);
        assert_eq!(timeout_ms(Duration::from_secs(u64::MAX)), u32::MAX);
        assert_eq!(timeout_ms(HttpOptions::default().timeout), 30_000);
    }
}
