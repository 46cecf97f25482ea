//! Fresh memory for decoded bytes: the owned reads (`Component::to_vec`,
//! `read_f32`, rows, slices) and `Reader::decode_many_to_vecs` fill
//! vectors allocated here.

use crate::error::{Error, Result, Status};

/// A vector this large is advised for transparent huge pages: it then
/// holds at least one whole 2 MiB page.
const HUGE_PAGES_FROM: usize = 4 << 20;
const HUGE_PAGE: usize = 2 << 20;

/// An empty Vec with room for `n` values of `T`, allocated fallibly: a size
/// the process cannot have is `Status::NoMemory`, never an abort (failed
/// allocation) or a panic (capacity overflow). From 4 MiB its whole 2 MiB
/// pages are advised for transparent huge pages, so that the library
/// filling it takes a page fault per 2 MiB instead of per 4 KiB: a 1.1 GiB
/// model decoded into vectors of its tensors' sizes took 191 - 206 ms
/// advised against 325 - 338 without (2-core VM, 2026-12-06), where
/// `std::fs::read`'s way, one `vec![0; n]` filled on both cores, took 303
/// - 340. A hint: where the kernel declines (THP off), nothing changes.
pub(crate) fn buffer<T>(n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Error {
        status: Status::NoMemory,
        message: format!(
            "cannot allocate a buffer of {n} values of {} bytes",
            std::mem::size_of::<T>()
        ),
    })?;
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes >= HUGE_PAGES_FROM {
        advise_huge_pages(v.as_mut_ptr() as usize, bytes);
    }
    Ok(v)
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(address: usize, bytes: usize) {
    extern "C" {
        fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: std::ffi::c_int) -> std::ffi::c_int;
    }
    const MADV_HUGEPAGE: std::ffi::c_int = 14;
    let start = address.next_multiple_of(HUGE_PAGE);
    let end = (address + bytes) / HUGE_PAGE * HUGE_PAGE;
    if end > start {
        // SAFETY: [start, end) lies inside the vector's own allocation,
        // page-aligned; the advice changes how its pages are backed, never
        // their contents. Its failure (no THP in this kernel) is ignored.
        unsafe { madvise(start as *mut std::ffi::c_void, end - start, MADV_HUGEPAGE) };
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_address: usize, _bytes: usize) {}
