//! One timed load for the report (bench/bench_rust.sh): open + every
//! tensor of a model into new `Vec<u8>`s, by `decode_many_to_vecs`
//! (`to-vecs`) or by `decode_many` into `vec![0; n]`s of their sizes
//! (`by-hand`), or the floor, a thread a core reading the file into one new
//! `vec![0; n]` (`read_at`, 8 MiB a call), the way a Rust program reads a
//! file at the hardware's speed with no format at all (`floor`; advised
//! for huge pages first, as the crate's own vectors are: `floor-huge`).
//! One load a process (a program's first load), printed as `go test
//! -bench` prints one iteration, for bench/report.py:
//!
//! ```sh
//! cargo run --release --offline --example load_bench -- llm to-vecs DIR
//! ```
//!
//! `llm` is 32 x 32 MiB and 500 x 256 KiB bf16 (1.1 GiB), `small` 4,096 x
//! 64 KiB; each is written into DIR by the first run that needs it.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use ztensor::{Encoding, Object, Reader, Writer};

fn model(dir: &Path, which: &str) -> ztensor::Result<PathBuf> {
    let (big, big_bytes, small, small_bytes) = match which {
        "llm" => (32, 32 << 20, 500, 256 << 10),
        _ => (0, 0, 4096, 64 << 10),
    };
    let path = dir.join(format!("rust-{which}.zt"));
    if path.exists() {
        return Ok(path);
    }
    let data: Vec<u8> = (0..big_bytes.max(small_bytes))
        .map(|i: usize| (i * 131 + (i >> 9)) as u8)
        .collect();
    let mut w = Writer::create(&path)?;
    for (prefix, n, bytes) in [("big", big, big_bytes), ("small", small, small_bytes)] {
        for k in 0..n {
            let name = format!("{prefix}.{k}");
            w.add_dense_bytes(&name, "bf16", &[bytes as u64 / 2], &data[..bytes], Encoding::Raw)?;
        }
    }
    w.finish()?;
    Ok(path)
}

/// Every tensor's bytes, decoded on every core into vectors of their own
/// that the library allocates.
fn to_vecs(path: &Path) -> ztensor::Result<Vec<Vec<u8>>> {
    let r = Reader::open(path)?;
    let items: Vec<(Object<'_>, &str)> = r.objects().map(|o| (o, "data")).collect();
    r.decode_many_to_vecs(&items, 0).into_iter().collect()
}

/// The same into vectors the caller allocates, as `vec![0; n]`.
fn by_hand(path: &Path) -> ztensor::Result<Vec<Vec<u8>>> {
    let r = Reader::open(path)?;
    let objects: Vec<Object<'_>> = r.objects().collect();
    let mut bufs = Vec::with_capacity(objects.len());
    for o in &objects {
        bufs.push(vec![0u8; o.data()?.read_size()? as usize]);
    }
    let mut items: Vec<(Object<'_>, &str, &mut [u8])> = objects
        .iter()
        .zip(bufs.iter_mut())
        .map(|(o, b)| (*o, "data", b.as_mut_slice()))
        .collect();
    for result in r.decode_many(&mut items, 0) {
        result?;
    }
    drop(items);
    Ok(bufs)
}

/// Asks for transparent huge pages over the vector's whole 2 MiB pages, as
/// the crate does for the vectors it allocates.
fn advise_huge_pages(v: &mut [u8]) {
    extern "C" {
        fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: std::ffi::c_int) -> std::ffi::c_int;
    }
    let start = (v.as_ptr() as usize).next_multiple_of(2 << 20);
    let end = (v.as_ptr() as usize + v.len()) / (2 << 20) * (2 << 20);
    if end > start {
        // SAFETY: whole pages inside the vector; a hint that keeps contents.
        unsafe { madvise(start as *mut std::ffi::c_void, end - start, 14) };
    }
}

/// The file's bytes in one new vector, a thread a core (`huge`: advised
/// for huge pages first).
fn read_all(path: &Path, huge: bool) -> std::io::Result<Vec<u8>> {
    let f = File::open(path)?;
    let size = f.metadata()?.len() as usize;
    let mut buf = vec![0u8; size]; // fresh pages of the system's, not yet touched
    if huge {
        advise_huge_pages(&mut buf);
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let share = size.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        for (k, part) in buf.chunks_mut(share).enumerate() {
            let f = &f;
            handles.push(s.spawn(move || -> std::io::Result<()> {
                let start = (k * share) as u64;
                for (j, piece) in part.chunks_mut(8 << 20).enumerate() {
                    f.read_exact_at(piece, start + (j as u64) * (8 << 20))?;
                }
                Ok(())
            }));
        }
        handles
            .into_iter()
            .try_for_each(|h| h.join().expect("a reading thread panicked"))
    })?;
    Ok(buf)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 || !["llm", "small"].contains(&args[1].as_str()) {
        eprintln!("usage: load_bench llm|small to-vecs|by-hand|floor|floor-huge DIR");
        std::process::exit(2);
    }
    let path = model(Path::new(&args[3]), &args[1]).expect("writing the model");
    let start = Instant::now();
    let (bytes, what): (usize, &str) = match args[2].as_str() {
        "to-vecs" => (
            to_vecs(&path)
                .expect("decode_many_to_vecs")
                .iter()
                .map(Vec::len)
                .sum(),
            "ToVecs",
        ),
        "by-hand" => (
            by_hand(&path).expect("decode_many").iter().map(Vec::len).sum(),
            "ByHand",
        ),
        "floor" => (read_all(&path, false).expect("reading the file").len(), "Floor"),
        "floor-huge" => (
            read_all(&path, true).expect("reading the file").len(),
            "FloorHuge",
        ),
        other => panic!("unknown load {other:?}"),
    };
    let ns = start.elapsed().as_nanos();
    let model = if args[1] == "llm" { "LLM" } else { "Small" };
    println!("BenchmarkRustLoad{model}{what}   1   {ns} ns/op   ({bytes} bytes)");
}
