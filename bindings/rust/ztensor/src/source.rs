//! Reading through your own transport (`zt_open_source`) and parallel
//! decoding (`zt_decode_many`, `zt_decode_ranges`).
use std::ffi::CString;
use std::os::raw::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ztensor_sys as sys;

use crate::error::{check, Error, Result, Status};
use crate::reader::{cstring, for_messages, opened, Object, Reader};

/// A file behind a transport of yours (an object store's SDK, a decrypting
/// reader): what [`Reader::open_source`] reads through. Called from several
/// threads at once.
pub trait ByteSource: Send + Sync + 'static {
    /// The file's size in bytes (asked once, at open).
    fn size(&self) -> std::io::Result<u64>;
    /// Reads up to `buf.len()` bytes at `offset`; fewer is a short read
    /// (asked again from there), 0 means the data ended early. An error (or
    /// a panic, which is caught) fails the call that needed the bytes with
    /// `Status::Io`. `buf` is zeroed before the call (the library's buffer
    /// may be fresh memory: it is never handed out uninitialised).
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize>;
    /// What messages call the source (`zt_source.name`): a key, a path, a
    /// URL. The library shows an http:// or https:// URL without its user
    /// info, query string and fragment (as `zt_url_for_messages`
    /// does), so a pre-signed URL's signature or a password never appears
    /// in a message; any other text appears as it is, so it should hold no
    /// secret. The binding passes the name on so shortened already (for a
    /// library that would not), and a name with a NUL byte not at all
    /// (messages say "source"); it never prints the name itself.
    fn name(&self) -> String {
        "source".into()
    }
}

struct Held<S> {
    source: S,
    _name: CString,
    // Set by `close` (the library is done with ctx): after a failed open it
    // tells whether the library released `Held` or left it to the caller.
    closed: Arc<AtomicBool>,
}

unsafe extern "C" fn read_at<S: ByteSource>(
    ctx: *mut c_void,
    offset: u64,
    length: usize,
    buf: *mut c_void,
    done: *mut usize,
) -> sys::zt_status {
    let held = &*(ctx as *const Held<S>);
    let out: &mut [u8] = if length == 0 {
        &mut []
    } else {
        // SAFETY: the library hands a writable buffer of `length` bytes,
        // which may be uninitialised (fresh capacity of its own): zeroed
        // here before a `&mut [u8]` over it exists, so safe code never sees
        // uninitialised memory.
        ptr::write_bytes(buf as *mut u8, 0, length);
        std::slice::from_raw_parts_mut(buf as *mut u8, length)
    };
    match catch_unwind(AssertUnwindSafe(|| held.source.read_at(offset, out))) {
        Ok(Ok(n)) => {
            *done = n;
            sys::ZT_OK
        }
        _ => sys::ZT_ERR_IO,
    }
}

unsafe extern "C" fn size_of<S: ByteSource>(ctx: *mut c_void, out: *mut u64) -> sys::zt_status {
    let held = &*(ctx as *const Held<S>);
    match catch_unwind(AssertUnwindSafe(|| held.source.size())) {
        Ok(Ok(n)) => {
            *out = n;
            sys::ZT_OK
        }
        _ => sys::ZT_ERR_IO,
    }
}

unsafe extern "C" fn close<S: ByteSource>(ctx: *mut c_void) {
    // SAFETY: ctx is the Box made in open_source, released here once.
    let held = Box::from_raw(ctx as *mut Held<S>);
    held.closed.store(true, Ordering::Release);
    drop(held);
}

/// Options of [`Reader::open_source_with`] (the fields of `zt_open_options`
/// that a reader over a [`ByteSource`] uses).
#[derive(Clone, Debug, Default)]
pub struct SourceOptions {
    /// Fetched ranges kept for reuse (reads up to a quarter of it are
    /// kept, least recently used dropped first); 0 = 64 MiB.
    pub cache_bytes: u64,
    /// Cap on one component's decoded size (`zt_open_options.max_decoded_bytes`);
    /// 0 = the library's default (64 GiB). A read of a component over it
    /// fails with `Status::Limit` before anything is fetched or allocated.
    pub max_decoded_bytes: u64,
}

impl Reader {
    /// Opens a .zt file read through `source` (`zt_open_source`): the tail
    /// and the manifest at open, then only the ranges calls need; reads up
    /// to a quarter of `cache_bytes` (0: 64 MiB) are kept. The Reader owns
    /// the source and drops it when it closes (or when the open fails).
    /// The other options: [`Reader::open_source_with`].
    pub fn open_source<S: ByteSource>(source: S, cache_bytes: u64) -> Result<Reader> {
        Reader::open_source_with(
            source,
            &SourceOptions {
                cache_bytes,
                ..SourceOptions::default()
            },
        )
    }

    /// [`Reader::open_source`] with options: the cache's size and the cap
    /// on decoded sizes.
    pub fn open_source_with<S: ByteSource>(source: S, options: &SourceOptions) -> Result<Reader> {
        // Passed on as messages may show it (the library shortens a URL
        // name itself too; this covers a library that would not); a name
        // with a NUL is not passed on at all.
        let name = CString::new(source.name())
            .map(|n| for_messages(&n))
            .unwrap_or_else(|_| c"source".into());
        let name_ptr: *const c_char = name.as_ptr();
        let closed = Arc::new(AtomicBool::new(false));
        let held = Box::into_raw(Box::new(Held {
            source,
            _name: name,
            closed: closed.clone(),
        }));
        let mut s: sys::zt_source = unsafe { std::mem::zeroed() };
        unsafe { sys::zt_source_init(&mut s) };
        s.flags = sys::ZT_SOURCE_CONCURRENT;
        s.ctx = held as *mut c_void;
        s.read_at = Some(read_at::<S>);
        s.size = Some(size_of::<S>);
        s.close = Some(close::<S>);
        s.name = name_ptr;
        let mut o: sys::zt_open_options = unsafe { std::mem::zeroed() };
        unsafe { sys::zt_open_options_init(&mut o) };
        o.cache_bytes = options.cache_bytes;
        o.max_decoded_bytes = options.max_decoded_bytes;
        let mut raw = ptr::null_mut();
        // From here the library owns `held`: close runs on every outcome but
        // a refusal of the struct itself (an unknown struct_size, from a
        // library older than this header), which leaves `held` to us.
        let st = unsafe { sys::zt_open_source(&s, &o, &mut raw) };
        let failed_unclosed = st != sys::ZT_OK && !closed.load(Ordering::Acquire);
        let reader = opened(st, raw, None); // reads the message first
        if failed_unclosed {
            // SAFETY: the open failed without calling close: the library
            // keeps no pointer to `held`, released here once.
            drop(unsafe { Box::from_raw(held) });
        }
        reader
    }

    /// Decodes several components into caller buffers on up to `threads`
    /// threads (0: all cores), sharing out zstd frames and raw slices
    /// (`zt_decode_many`). Each item gets its own result: the bytes written
    /// or its error; an item whose Object comes from another Reader fails
    /// alone with `Status::Argument`.
    pub fn decode_many(
        &self,
        items: &mut [(Object<'_>, &str, &mut [u8])],
        threads: u32,
    ) -> Vec<Result<usize>> {
        let roles: Vec<(Object<'_>, &str)> = items.iter().map(|(o, role, _)| (*o, *role)).collect();
        let dsts: Vec<(*mut c_void, u64)> = items
            .iter_mut()
            .map(|(_, _, dst)| (dst.as_mut_ptr() as *mut c_void, dst.len() as u64))
            .collect();
        self.decode_many_at(&roles, &dsts, threads)
    }

    /// One `zt_decode_many` call through `batch()`: item k is `roles[k]`
    /// decoded to `dsts[k]` (an address with room for that many bytes,
    /// which must stay writable and unaliased for the call).
    fn decode_many_at(
        &self,
        roles: &[(Object<'_>, &str)],
        dsts: &[(*mut c_void, u64)],
        threads: u32,
    ) -> Vec<Result<usize>> {
        self.batch(roles, |c_roles| {
            let mut reqs = Vec::new();
            for (k, ((object, _), &(dst, capacity))) in roles.iter().zip(dsts).enumerate() {
                let Some(role) = c_roles[k] else { continue };
                let mut r: sys::zt_decode_request = unsafe { std::mem::zeroed() };
                unsafe { sys::zt_decode_request_init(&mut r) };
                r.object = object.index();
                r.role = role;
                r.dst = dst;
                r.capacity = capacity;
                reqs.push(r);
            }
            let first = unsafe { sys::zt_decode_many(self.raw(), reqs.as_mut_ptr(), reqs.len(), threads) };
            (first, reqs.iter().map(|r| (r.status, r.written)).collect())
        })
    }

    /// Decodes several components into new vectors on up to `threads`
    /// threads (0: all cores) in one `zt_decode_many` call: a whole model
    /// with every core decoding, raw slices, zstd frames and small
    /// components shared out. Each item gets its own result: its decoded
    /// bytes or its error (an unknown role, an Object of another Reader, a
    /// size over the reader's `max_decoded_bytes`: `Status::Limit` before
    /// anything is allocated). The vectors are allocated as
    /// [`Component::to_vec`]'s are (from 4 MiB in transparent huge pages:
    /// a 1.1 GiB model 1.6x faster than into `vec![0; n]`s of its sizes
    /// through [`Reader::decode_many`], 2-core VM). A component whose size
    /// is known only by decoding (a zstd stream that does not declare it)
    /// is decoded on its own into the reader's cache, as
    /// [`Component::bytes`] does, and copied.
    ///
    /// [`Component::to_vec`]: crate::Component::to_vec
    /// [`Component::bytes`]: crate::Component::bytes
    pub fn decode_many_to_vecs(&self, items: &[(Object<'_>, &str)], threads: u32) -> Vec<Result<Vec<u8>>> {
        let mut out: Vec<Option<Result<Vec<u8>>>> = Vec::with_capacity(items.len());
        let mut submitted = Vec::new(); // (item index, its vector, its size)
        for (i, &(object, role)) in items.iter().enumerate() {
            if !ptr::eq(object.reader(), self) {
                submitted.push((i, Vec::new(), 0)); // batch() refuses it, saying why
                out.push(None);
                continue;
            }
            let sized = object.component(role).and_then(|c| match c.checked_read_size()? {
                None => c.to_vec().map(Err), // known only by decoding: decoded alone
                Some(n) => {
                    let n = usize::try_from(n)
                        .map_err(|_| crate::error::argument(format!("{n} bytes do not fit in memory")))?;
                    Ok(Ok((crate::buffers::buffer::<u8>(n)?, n)))
                }
            });
            out.push(match sized {
                Ok(Ok((v, n))) => {
                    submitted.push((i, v, n));
                    None
                }
                Ok(Err(decoded)) => Some(Ok(decoded)),
                Err(e) => Some(Err(e)),
            });
        }
        let roles: Vec<(Object<'_>, &str)> = submitted.iter().map(|&(i, _, _)| items[i]).collect();
        let dsts: Vec<(*mut c_void, u64)> = submitted
            .iter_mut()
            .map(|(_, v, n)| (v.as_mut_ptr() as *mut c_void, *n as u64))
            .collect();
        let results = self.decode_many_at(&roles, &dsts, threads);
        for ((i, mut v, n), result) in submitted.into_iter().zip(results) {
            out[i] = Some(result.map(|written| {
                // SAFETY: the vector's capacity is at least n; the library
                // wrote `written` bytes (never more than the n it was given).
                unsafe { v.set_len(written.min(n)) };
                v
            }));
        }
        out.into_iter()
            .map(|r| r.expect("every item has its result"))
            .collect()
    }

    /// Decodes byte ranges of components into caller buffers on up to
    /// `threads` threads (0: all cores; `zt_decode_ranges`): item
    /// `(object, role, offset, dst)` receives decoded bytes `[offset,
    /// offset + dst.len())`, reading only the raw bytes or zstd frames that
    /// hold them. It is what a loader to a device needs: fill a pinned
    /// staging buffer with ranges (small tensors batched, large ones split),
    /// start its copy, fill the next buffer meanwhile (docs/bindings.md,
    /// "Loading to a device"). Each item gets its own result: the bytes
    /// written or its error (a range past the decoded end, an Object of
    /// another Reader: `Status::Argument`).
    pub fn decode_ranges(
        &self,
        items: &mut [(Object<'_>, &str, u64, &mut [u8])],
        threads: u32,
    ) -> Vec<Result<usize>> {
        let roles: Vec<(Object<'_>, &str)> = items.iter().map(|(o, role, _, _)| (*o, *role)).collect();
        self.batch(&roles, |roles| {
            let mut reqs = Vec::new();
            for (i, (object, _, offset, dst)) in items.iter_mut().enumerate() {
                let Some(role) = roles[i] else { continue };
                let mut r: sys::zt_decode_range = unsafe { std::mem::zeroed() };
                unsafe { sys::zt_decode_range_init(&mut r) };
                r.object = object.index();
                r.role = role;
                r.offset = *offset;
                r.dst = dst.as_mut_ptr() as *mut c_void;
                r.length = dst.len() as u64;
                reqs.push(r);
            }
            let first = unsafe {
                sys::zt_decode_ranges(
                    self.raw(),
                    reqs.as_mut_ptr(),
                    reqs.len(),
                    threads,
                    None,
                    ptr::null_mut(),
                )
            };
            (first, reqs.iter().map(|r| (r.status, r.written)).collect())
        })
    }

    /// Both batch calls: the roles as C strings (an item whose Object is
    /// another Reader's, or whose role has a NUL, fails alone), `run` with
    /// the role of each item (None: skip it) returning the call's status
    /// and each submitted request's (status, written), then one result per
    /// item. The library's message is the first failed request's (array
    /// order); the others get their status with a pointer to it.
    fn batch(
        &self,
        roles: &[(Object<'_>, &str)],
        run: impl FnOnce(&[Option<*const c_char>]) -> (sys::zt_status, Vec<(u32, u64)>),
    ) -> Vec<Result<usize>> {
        let mut out: Vec<Option<Result<usize>>> = Vec::with_capacity(roles.len());
        let mut owned = Vec::with_capacity(roles.len());
        for (i, (object, role)) in roles.iter().enumerate() {
            // The request names the object by its index: one of another
            // Reader would decode this reader's object at that index.
            if !std::ptr::eq(object.reader(), self) {
                owned.push(CString::default());
                out.push(Some(Err(crate::error::argument(format!(
                    "item {i}: object \"{}\" belongs to another Reader",
                    object.name()
                )))));
                continue;
            }
            match cstring("role", role) {
                Ok(c) => {
                    owned.push(c);
                    out.push(None);
                }
                Err(e) => {
                    owned.push(CString::default());
                    out.push(Some(Err(e)));
                }
            }
        }
        let ptrs: Vec<Option<*const c_char>> = owned
            .iter()
            .zip(&out)
            .map(|(c, o)| if o.is_none() { Some(c.as_ptr()) } else { None })
            .collect();
        let which: Vec<usize> = (0..roles.len()).filter(|&i| out[i].is_none()).collect();
        let (first, done) = run(&ptrs);
        item_results(check(first), done, &which, out)
    }
}

/// One result per item of a batch call: `out` holds the items refused
/// before the call (None for those submitted), `which` the item index of
/// each submitted request, `done` each request's (status, written). The
/// first failed request gets the call's error (the library's message);
/// later ones their own status. A call that failed while no request says
/// so (refused before attempting any: a NULL reader, an unknown
/// struct_size) fails every submitted item with its error, never Ok.
fn item_results(
    call: Result<()>,
    done: Vec<(u32, u64)>,
    which: &[usize],
    mut out: Vec<Option<Result<usize>>>,
) -> Vec<Result<usize>> {
    let first_error = call.err();
    let none_failed = done.iter().all(|&(status, _)| status == sys::ZT_OK as u32);
    let mut first_seen = false;
    for ((status, written), &i) in done.into_iter().zip(which) {
        out[i] = Some(match &first_error {
            Some(e) if none_failed => Err(e.clone()),
            _ if status == sys::ZT_OK as u32 => Ok(written as usize),
            _ if !first_seen => {
                first_seen = true;
                Err(first_error
                    .clone()
                    .unwrap_or_else(|| crate::error::argument(format!("item {i}: decode failed"))))
            }
            _ => Err(Error {
                status: Status::from_raw(status as i32),
                message: format!("item {i} failed (the library explains only the first failure)"),
            }),
        });
    }
    out.into_iter().map(|r| r.unwrap()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(status: Status) -> Error {
        Error {
            status,
            message: "the call's message".into(),
        }
    }

    #[test]
    fn a_call_refused_before_any_request_fails_every_item() {
        // zt_decode_many / zt_decode_ranges refused the call (NULL reader,
        // unknown struct_size) without writing a request's status: the
        // requests still say ZT_OK (zt_decode_request_init), written 0.
        let out = item_results(
            Err(err(Status::Argument)),
            vec![(sys::ZT_OK as u32, 0), (sys::ZT_OK as u32, 0)],
            &[0, 2],
            vec![None, Some(Err(err(Status::NotFound))), None],
        );
        assert_eq!(out.len(), 3);
        for r in &out {
            assert!(r.is_err(), "{r:?}");
        }
        assert_eq!(out[0].as_ref().unwrap_err().status, Status::Argument);
        assert_eq!(out[1].as_ref().unwrap_err().status, Status::NotFound);
        assert_eq!(out[2].as_ref().unwrap_err().status, Status::Argument);
    }

    #[test]
    fn failed_requests_fail_alone() {
        let out = item_results(
            Err(err(Status::Invalid)),
            vec![
                (sys::ZT_OK as u32, 4),
                (sys::ZT_ERR_INVALID as u32, 0),
                (sys::ZT_ERR_ARGUMENT as u32, 0),
            ],
            &[0, 1, 2],
            vec![None, None, None],
        );
        assert_eq!(out[0], Ok(4));
        assert_eq!(out[1].as_ref().unwrap_err(), &err(Status::Invalid));
        assert_eq!(out[2].as_ref().unwrap_err().status, Status::Argument);
        let ok = item_results(Ok(()), vec![(sys::ZT_OK as u32, 7)], &[0], vec![None]);
        assert_eq!(ok, vec![Ok(7)]);
    }
}
