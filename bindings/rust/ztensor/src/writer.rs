//! Writing: Writer, and the object and component streams it lends out.
use std::io;
use std::os::raw::c_void;
use std::path::Path;
use std::ptr::{self, NonNull};

use ztensor_sys as sys;

use crate::element::Element;
use crate::error::{argument, check, Error, Result, Status};
use crate::reader::{cstring, path_cstring};

/// How a component is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Encoding {
    #[default]
    Raw,
    Zstd,
    /// zstd where it pays (the writer's auto_min_ratio), else raw.
    Auto,
}

impl Encoding {
    fn c(self) -> &'static std::ffi::CStr {
        match self {
            Encoding::Raw => c"raw",
            Encoding::Zstd => c"zstd",
            Encoding::Auto => c"auto",
        }
    }
}

/// The digest the writer stores with each component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Digest {
    Xxh3,
    Sha256,
    None,
}

/// Options of [`Writer::create_with`]; `None` keeps the library's default.
#[derive(Clone, Debug, Default)]
pub struct WriterOptions {
    pub zstd_level: Option<i32>,
    pub threads: Option<u32>,
    pub digest: Option<Digest>,
    pub frame_size: Option<u64>,
    /// The container written (`zt_writer_options.file_version`): `None` or
    /// `Some(0)`: spec 1.2.0 (the default); `Some(2)`: zTensor v2. Any other
    /// value, 1 included, is refused with `Status::Argument`.
    pub file_version: Option<u32>,
    pub shard_bytes: Option<u64>,
}

/// Writes a .zt file. Nothing appears at the path until [`Writer::finish`]
/// (written beside it, synced, renamed); a Writer dropped unfinished aborts
/// and leaves no file. One thread at a time (`Send`, not `Sync`).
pub struct Writer {
    raw: Option<NonNull<sys::zt_writer>>,
}

// SAFETY: a zt_writer belongs to one thread at a time; &mut self enforces it.
unsafe impl Send for Writer {}

impl Drop for Writer {
    fn drop(&mut self) {
        if let Some(w) = self.raw.take() {
            // SAFETY: unfinished writer, aborted once.
            unsafe { sys::zt_writer_abort(w.as_ptr()) }
        }
    }
}

impl Writer {
    pub fn create(path: impl AsRef<Path>) -> Result<Writer> {
        Writer::create_with(path, &WriterOptions::default())
    }

    pub fn create_with(path: impl AsRef<Path>, options: &WriterOptions) -> Result<Writer> {
        let path = path_cstring(path.as_ref())?;
        let mut o: sys::zt_writer_options = unsafe { std::mem::zeroed() };
        unsafe { sys::zt_writer_options_init(&mut o) };
        if let Some(v) = options.zstd_level {
            o.zstd_level = v;
        }
        if let Some(v) = options.threads {
            o.threads = v;
        }
        if let Some(d) = options.digest {
            o.digest = match d {
                Digest::Xxh3 => sys::ZT_DIGEST_XXH3,
                Digest::Sha256 => sys::ZT_DIGEST_SHA256,
                Digest::None => sys::ZT_DIGEST_NONE,
            } as u32;
        }
        if let Some(v) = options.frame_size {
            o.frame_size = v;
        }
        if let Some(v) = options.file_version {
            o.file_version = v;
        }
        if let Some(v) = options.shard_bytes {
            o.shard_bytes = v;
        }
        let mut raw = ptr::null_mut();
        check(unsafe { sys::zt_writer_open_ex(path.as_ptr(), &o, &mut raw) })?;
        Ok(Writer {
            raw: NonNull::new(raw),
        })
    }

    /// Opens a zTensor v2 file to append a generation to it
    /// (`zt_writer_open_append`): earlier bytes never change.
    pub fn append(path: impl AsRef<Path>) -> Result<Writer> {
        let path = path_cstring(path.as_ref())?;
        let mut raw = ptr::null_mut();
        check(unsafe { sys::zt_writer_open_append(path.as_ptr(), ptr::null(), &mut raw) })?;
        Ok(Writer {
            raw: NonNull::new(raw),
        })
    }

    fn raw(&self) -> Result<*mut sys::zt_writer> {
        self.raw
            .map(NonNull::as_ptr)
            .ok_or_else(|| argument("the writer is finished"))
    }

    /// A dense object of `shape` holding `data` (row-major), dtype from `T`.
    pub fn add_dense<T: Element>(
        &mut self,
        name: &str,
        shape: &[u64],
        data: &[T],
        encoding: Encoding,
    ) -> Result<()> {
        // SAFETY: Element types are plain numbers; their bytes are the data.
        let bytes =
            unsafe { std::slice::from_raw_parts(data.as_ptr() as *const u8, std::mem::size_of_val(data)) };
        self.add_dense_bytes(name, T::DTYPES[0], shape, bytes, encoding)
    }

    /// A dense object of `shape` from little-endian bytes of `dtype`
    /// ("bf16", "f8_e4m3fn" storage as "u8", ...).
    pub fn add_dense_bytes(
        &mut self,
        name: &str,
        dtype: &str,
        shape: &[u64],
        bytes: &[u8],
        encoding: Encoding,
    ) -> Result<()> {
        let (name, dtype) = (cstring("name", name)?, cstring("dtype", dtype)?);
        check(unsafe {
            sys::zt_writer_add_dense(
                self.raw()?,
                name.as_ptr(),
                dtype.as_ptr(),
                shape.as_ptr(),
                shape.len(),
                bytes.as_ptr() as *const c_void,
                bytes.len() as u64,
                encoding.c().as_ptr(),
            )
        })
    }

    /// Begins an object of any format; add its components to the returned
    /// ObjectWriter, then call its `end()`. Dropped without `end()`, or
    /// when `end()` fails, the object is cancelled: the writer stays usable
    /// for the next object.
    pub fn begin_object(&mut self, name: &str, format: &str, shape: &[u64]) -> Result<ObjectWriter<'_>> {
        let (name, format) = (cstring("name", name)?, cstring("format", format)?);
        check(unsafe {
            sys::zt_writer_begin_object(
                self.raw()?,
                name.as_ptr(),
                format.as_ptr(),
                shape.as_ptr(),
                shape.len(),
            )
        })?;
        Ok(ObjectWriter {
            writer: self,
            open: true,
            abandoned: None,
        })
    }

    /// The file's attributes, given as JSON (stored as CBOR).
    pub fn set_file_attributes_json(&mut self, json: &str) -> Result<()> {
        let json = cstring("json", json)?;
        check(unsafe { sys::zt_writer_set_file_attributes_json(self.raw()?, json.as_ptr()) })
    }

    /// The file's attributes as one encoded CBOR map, kept exactly.
    pub fn set_file_attributes_cbor(&mut self, cbor: &[u8]) -> Result<()> {
        check(unsafe {
            sys::zt_writer_set_file_attributes_cbor(self.raw()?, cbor.as_ptr() as *const c_void, cbor.len())
        })
    }

    /// Writes the manifest and publishes the file (sync, rename).
    pub fn finish(mut self) -> Result<()> {
        let w = self
            .raw
            .take()
            .ok_or_else(|| argument("the writer is finished"))?;
        // zt_writer_finish frees the writer whatever it returns.
        check(unsafe { sys::zt_writer_finish(w.as_ptr()) })
    }

    /// Drops everything written; no file appears.
    pub fn abort(self) {}
}

/// An object being written (from [`Writer::begin_object`]). Dropped
/// without a successful [`ObjectWriter::end`], its object is cancelled
/// (`zt_writer_cancel_object`: its bytes are cut off the file).
pub struct ObjectWriter<'w> {
    writer: &'w mut Writer,
    // The object is begun and not yet kept: cancelled on drop.
    open: bool,
    // The role of a ComponentWriter dropped without end(): the object can
    // then only be cancelled.
    abandoned: Option<String>,
}

impl Drop for ObjectWriter<'_> {
    fn drop(&mut self) {
        if self.open {
            if let Ok(w) = self.writer.raw() {
                // SAFETY: a live writer. With its object open (a component
                // too, perhaps) this drops it; where the library already
                // dropped it (a refused end) or the writer failed, it is a
                // harmless ZT_ERR_STATE.
                unsafe { sys::zt_writer_cancel_object(w) };
            }
        }
    }
}

impl ObjectWriter<'_> {
    /// A whole component from memory.
    pub fn add_component(
        &mut self,
        role: &str,
        dtype: &str,
        logical_type: Option<&str>,
        bytes: &[u8],
        encoding: Encoding,
    ) -> Result<()> {
        let (role, dtype) = (cstring("role", role)?, cstring("dtype", dtype)?);
        let ty = logical_type.map(|t| cstring("type", t)).transpose()?;
        check(unsafe {
            sys::zt_writer_add_component(
                self.writer.raw()?,
                role.as_ptr(),
                dtype.as_ptr(),
                ty.as_ref().map_or(ptr::null(), |t| t.as_ptr()),
                bytes.as_ptr() as *const c_void,
                bytes.len() as u64,
                encoding.c().as_ptr(),
            )
        })
    }

    /// A component written in pieces (`std::io::Write`), `decoded_size`
    /// bytes in all; call its `end()`. A ComponentWriter dropped without
    /// `end()` abandons the object: this ObjectWriter's `end()` then fails
    /// (`Status::State`) and cancels the object.
    pub fn begin_component(
        &mut self,
        role: &str,
        dtype: &str,
        logical_type: Option<&str>,
        decoded_size: u64,
        encoding: Encoding,
    ) -> Result<ComponentWriter<'_>> {
        let (role, dtype) = (cstring("role", role)?, cstring("dtype", dtype)?);
        let ty = logical_type.map(|t| cstring("type", t)).transpose()?;
        check(unsafe {
            sys::zt_writer_begin_component(
                self.writer.raw()?,
                role.as_ptr(),
                dtype.as_ptr(),
                ty.as_ref().map_or(ptr::null(), |t| t.as_ptr()),
                encoding.c().as_ptr(),
                decoded_size,
            )
        })?;
        Ok(ComponentWriter {
            writer: self.writer.raw()?,
            role: role.to_string_lossy().into_owned(),
            abandoned: &mut self.abandoned,
            ended: false,
        })
    }

    /// The object's attributes, given as JSON.
    pub fn set_attributes_json(&mut self, json: &str) -> Result<()> {
        let json = cstring("json", json)?;
        check(unsafe { sys::zt_writer_set_object_attributes_json(self.writer.raw()?, json.as_ptr()) })
    }

    /// The object's attributes as one encoded CBOR map, kept exactly.
    pub fn set_attributes_cbor(&mut self, cbor: &[u8]) -> Result<()> {
        check(unsafe {
            sys::zt_writer_set_object_attributes_cbor(
                self.writer.raw()?,
                cbor.as_ptr() as *const c_void,
                cbor.len(),
            )
        })
    }

    /// Checks the object against its format's rules and keeps it. On any
    /// failure (a broken rule, a component still open because its
    /// ComponentWriter was dropped without `end()`) the object is dropped,
    /// and the writer stays usable for other objects and `finish()`
    /// (unless the file itself failed, `Status::Io` or `Status::NoMemory`).
    pub fn end(mut self) -> Result<()> {
        let w = self.writer.raw()?;
        if let Some(role) = self.abandoned.take() {
            // Drop cancels the object, open component and all.
            return Err(Error {
                status: Status::State,
                message: format!("component \"{role}\" was dropped without end(): the object is cancelled"),
            });
        }
        // SAFETY: an object is open on this live writer.
        let ended = check(unsafe { sys::zt_writer_end_object(w) });
        // Kept: nothing to cancel. Refused: the library dropped the object
        // (a broken rule) or left it open (ZT_ERR_STATE); Drop cancels it
        // (a no-op in the first case).
        self.open = ended.is_err();
        ended
    }

    /// Drops the object.
    pub fn cancel(self) {}
}

/// A component being written in pieces; `end()` checks its size (a
/// refused end drops the component, its object stays open). Dropped
/// without `end()`, it abandons its object: the ObjectWriter's `end()`
/// fails with `Status::State` and cancels the object (nothing half-written
/// is kept), and the writer stays usable.
pub struct ComponentWriter<'o> {
    writer: *mut sys::zt_writer,
    role: String,
    // The ObjectWriter's, borrowed mutably (nothing else writes meanwhile):
    // set to the role when dropped without end().
    abandoned: &'o mut Option<String>,
    ended: bool,
}

impl Drop for ComponentWriter<'_> {
    fn drop(&mut self) {
        if !self.ended {
            *self.abandoned = Some(std::mem::take(&mut self.role));
        }
    }
}

impl ComponentWriter<'_> {
    pub fn end(mut self) -> Result<()> {
        self.ended = true;
        check(unsafe { sys::zt_writer_end_component(self.writer) })
    }
}

impl io::Write for ComponentWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        check(unsafe { sys::zt_writer_write(self.writer, buf.as_ptr() as *const c_void, buf.len() as u64) })
            .map_err(io::Error::other)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
