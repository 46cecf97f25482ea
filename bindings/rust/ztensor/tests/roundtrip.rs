//! The safe crate against the installed library: every kind of object
//! written and read back, views, slices, streaming, verify, errors, the
//! writer's abort on drop, and a Reader shared by threads.
use std::io::Write as _;
use std::path::PathBuf;

use ztensor::{Encoding, HttpOptions, Reader, Status, Writer, WriterOptions};

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("ztensor-rs-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

fn u64_bytes(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// dense raw + zstd, CSR, COO, an i64 vector, attributes.
fn write_sample(path: &std::path::Path) {
    let mut w = Writer::create_with(
        path,
        &WriterOptions {
            zstd_level: Some(3),
            ..Default::default()
        },
    )
    .unwrap();
    let weights: Vec<f32> = (0..12).map(|i| i as f32 * 0.5).collect();
    w.add_dense("w", &[3, 4], &weights, Encoding::Raw).unwrap();
    let ramp: Vec<u16> = (0..4096).map(|i| (i % 7) as u16).collect();
    w.add_dense("ramp", &[64, 64], &ramp, Encoding::Zstd).unwrap();
    w.add_dense("ids", &[3], &[-1i64, 0, 1 << 40], Encoding::Raw)
        .unwrap();
    let mut csr = w.begin_object("adj", "sparse_csr", &[3, 4]).unwrap();
    csr.add_component("values", "f32", None, &f32_bytes(&[1.0, 2.0, 3.0]), Encoding::Raw)
        .unwrap();
    csr.add_component("indices", "u64", None, &u64_bytes(&[0, 2, 1]), Encoding::Raw)
        .unwrap();
    csr.add_component("indptr", "u64", None, &u64_bytes(&[0, 2, 2, 3]), Encoding::Raw)
        .unwrap();
    csr.set_attributes_json(r#"{"kind": "graph"}"#).unwrap();
    csr.end().unwrap();
    let mut coo = w.begin_object("pts", "sparse_coo", &[3, 4]).unwrap();
    coo.add_component("values", "f32", None, &f32_bytes(&[5.0, 6.0]), Encoding::Raw)
        .unwrap();
    coo.add_component("coords", "u64", None, &u64_bytes(&[0, 2, 1, 3]), Encoding::Raw)
        .unwrap();
    coo.end().unwrap();
    w.set_file_attributes_json(r#"{"framework": "rust"}"#).unwrap();
    w.finish().unwrap();
}

#[test]
fn every_kind_round_trips() {
    let dir = TempDir::new("kinds");
    let path = dir.path("m.zt");
    write_sample(&path);
    let r = Reader::open(&path).unwrap();
    assert_eq!(r.file_version(), "1.2.0");
    assert_eq!(r.file_format(), "zt");
    let names: Vec<&str> = r.objects().map(|o| o.name()).collect();
    assert_eq!(names, ["w", "ramp", "ids", "adj", "pts"]);

    let w = r.object("w").unwrap();
    assert_eq!((w.format(), w.shape()), ("dense", &[3u64, 4][..]));
    let data = w.data().unwrap();
    assert_eq!((data.dtype(), data.encoding()), ("f32", "raw"));
    assert_eq!(data.as_slice::<f32>().unwrap()[5], 2.5);
    let view = w.dense().unwrap();
    assert!(view.zero_copy);
    assert_eq!(view.data.as_ptr(), data.bytes().unwrap().as_ptr()); // one mapping

    let ramp = r.object("ramp").unwrap().data().unwrap();
    assert_eq!(ramp.encoding(), "zstd");
    assert_eq!(ramp.as_slice::<u16>().unwrap()[13], 13 % 7);
    assert_eq!(ramp.to_vec().unwrap(), ramp.bytes().unwrap());
    assert_eq!(
        r.object("ids")
            .unwrap()
            .data()
            .unwrap()
            .as_slice::<i64>()
            .unwrap(),
        &[-1, 0, 1 << 40]
    );

    let csr = r.object("adj").unwrap().csr().unwrap();
    assert_eq!((csr.rows, csr.cols, csr.nnz), (3, 4, 3));
    assert_eq!(csr.indptr_u64().unwrap(), [0, 2, 2, 3]);
    assert_eq!(csr.indices_u64().unwrap(), [0, 2, 1]);
    assert_eq!(
        r.object("adj").unwrap().decode_f32().unwrap(),
        [1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0]
    );
    let coo = r.object("pts").unwrap().coo().unwrap();
    assert_eq!((coo.shape, coo.nnz), (&[3u64, 4][..], 2));
    assert_eq!(coo.coords_u64().unwrap(), [0, 2, 1, 3]);
    assert!(!r.object("adj").unwrap().attributes_cbor().unwrap().is_empty());
    assert!(!r.attributes_cbor().unwrap().is_empty());
    assert!(r.manifest_json().contains("\"adj\""));
    assert_eq!(r.verify().unwrap(), (8, 0));
}

#[test]
fn slices_and_conversions_read_only_the_box() {
    let dir = TempDir::new("slices");
    let path = dir.path("m.zt");
    write_sample(&path);
    let r = Reader::open(&path).unwrap();
    let w = r.object("w").unwrap();
    assert_eq!(w.slice_f32(&[1, 1], &[3, 3]).unwrap(), [2.5, 3.0, 4.5, 5.0]);
    let bytes = w.slice(&[0, 2], &[1, 4]).unwrap();
    assert_eq!(bytes, f32_bytes(&[1.0, 1.5]));
    assert_eq!(
        r.object("ids").unwrap().read_f32().unwrap(),
        [-1.0, 0.0, (1u64 << 40) as f32]
    );
    let ramp = r.object("ramp").unwrap();
    assert_eq!(ramp.slice_f32(&[1, 0], &[1, 3]).unwrap().len(), 0); // an empty box
    assert_eq!(
        ramp.slice_f32(&[1, 0], &[2, 3]).unwrap(),
        [(64 % 7) as f32, (65 % 7) as f32, (66 % 7) as f32]
    );
}

#[test]
fn a_box_outside_the_shape_is_the_librarys_refusal_not_an_allocation() {
    // The box sized the buffer before the library checked it: a box of 10^12
    // rows aborted the process (allocation failure), a larger one panicked.
    let dir = TempDir::new("bigbox");
    let path = dir.path("m.zt");
    write_sample(&path);
    let r = Reader::open(&path).unwrap();
    let w = r.object("w").unwrap();
    for end in [5u64, 1_000_000_000_000, 6_148_914_691_236_517_205, u64::MAX] {
        let e = w.slice_f32(&[0, 0], &[end, 3]).unwrap_err();
        assert_eq!(e.status, Status::Argument, "{}", e.message);
        let e = w.slice(&[0, 0], &[end, 3]).unwrap_err();
        assert_eq!(e.status, Status::Argument, "{}", e.message);
    }
    assert_eq!(w.slice_f64(&[0, 0], &[1, 3]).unwrap().len(), 3);
}

#[test]
fn f4_e2m1_components_convert_two_values_a_byte() {
    let dir = TempDir::new("f4");
    let path = dir.path("f4.zt");
    let options = WriterOptions { file_version: Some(2), ..Default::default() };
    let mut w = Writer::create_with(&path, &options).unwrap();
    {
        let mut o = w.begin_object("s", "sparse_csr", &[2, 4]).unwrap();
        o.add_component("values", "u8", Some("f4_e2m1"), &[0x21, 0x03], Encoding::Raw).unwrap();
        let indices: Vec<u8> = [0u64, 1, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
        let indptr: Vec<u8> = [0u64, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
        o.add_component("indices", "u64", None, &indices, Encoding::Raw).unwrap();
        o.add_component("indptr", "u64", None, &indptr, Encoding::Raw).unwrap();
        o.end().unwrap();
    }
    w.finish().unwrap();
    let r = Reader::open(&path).unwrap();
    let values = r.object("s").unwrap().component("values").unwrap().read_f32().unwrap();
    assert_eq!(values[..3], [0.5, 1.0, 1.5]); // codes 1, 2, 3; the fourth nibble pads
}

#[test]
fn streaming_writes_and_from_bytes() {
    let dir = TempDir::new("stream");
    let path = dir.path("s.zt");
    let mut w = Writer::create(&path).unwrap();
    {
        let mut o = w.begin_object("big", "dense", &[1000]).unwrap();
        let mut c = o
            .begin_component("data", "f32", None, 4000, Encoding::Zstd)
            .unwrap();
        for chunk in (0..1000).map(|i| i as f32).collect::<Vec<_>>().chunks(300) {
            c.write_all(&f32_bytes(chunk)).unwrap();
        }
        c.end().unwrap();
        o.end().unwrap();
    }
    {
        // A dropped ObjectWriter cancels its object.
        let mut o = w.begin_object("dropped", "dense", &[1]).unwrap();
        o.add_component("data", "f32", None, &f32_bytes(&[1.0]), Encoding::Raw)
            .unwrap();
    }
    w.finish().unwrap();
    let r = Reader::from_bytes(std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(r.len(), 1);
    assert_eq!(r.object("big").unwrap().read_f32().unwrap()[999], 999.0);
}

#[test]
fn errors_carry_the_status_and_message() {
    let dir = TempDir::new("errors");
    let e = Reader::open(dir.path("missing.zt")).err().unwrap();
    assert_eq!(e.status, Status::Io);
    assert!(e.message.contains("missing.zt"), "{}", e.message);
    assert_eq!(e.status.name(), "ZT_ERR_IO");
    let e = Reader::from_bytes(vec![0u8; 64]).err().unwrap();
    assert_eq!(e.status, Status::Format);

    let path = dir.path("m.zt");
    write_sample(&path);
    let r = Reader::open(&path).unwrap();
    assert_eq!(r.object("nope").err().unwrap().status, Status::NotFound);
    let e = r.object("w").unwrap().component("values").err().unwrap();
    assert_eq!(e.status, Status::NotFound);
    assert!(e.message.contains("\"w\""), "{}", e.message);
    let e = r
        .object("w")
        .unwrap()
        .data()
        .unwrap()
        .as_slice::<u16>()
        .err()
        .unwrap();
    assert_eq!(e.status, Status::Argument);
    assert_eq!(r.object("a\0b").err().unwrap().status, Status::Argument);
    let _: &dyn std::error::Error = &e;

    // A shape that does not match the data: the object is refused.
    let mut w = Writer::create(dir.path("bad.zt")).unwrap();
    let e = w
        .add_dense("x", &[5], &[1.0f32, 2.0], Encoding::Raw)
        .err()
        .unwrap();
    assert_eq!(e.status, Status::Argument, "{e}");
    assert!(e.message.contains("needs 20"), "{e}");
}

#[test]
fn a_dropped_writer_leaves_no_file() {
    let dir = TempDir::new("abort");
    let path = dir.path("never.zt");
    {
        let mut w = Writer::create(&path).unwrap();
        w.add_dense("x", &[2], &[1.0f32, 2.0], Encoding::Raw).unwrap();
    }
    assert!(!path.exists());
    assert_eq!(
        std::fs::read_dir(&dir.0).unwrap().count(),
        0,
        "no temporary file left"
    );
}

#[test]
fn a_reader_is_shared_by_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Reader>();
    let dir = TempDir::new("threads");
    let path = dir.path("m.zt");
    write_sample(&path);
    let r = Reader::open(&path).unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let r = &r;
            s.spawn(move || {
                for _ in 0..50 {
                    let ramp = r
                        .object("ramp")
                        .unwrap()
                        .data()
                        .unwrap()
                        .as_slice::<u16>()
                        .unwrap();
                    assert_eq!(ramp[(t * 7 + 3) as usize], 3);
                }
            });
        }
    });
    assert!(!ztensor::version().is_empty());
    // The count itself is tested in C++ and Python; here, that it arrives.
    assert!(ztensor::cpu_count() >= 1);
}

/// A file in memory behind ByteSource, in reads of at most 7 bytes.
struct Choppy(Vec<u8>, std::sync::Arc<std::sync::atomic::AtomicBool>);

impl ztensor::ByteSource for Choppy {
    fn size(&self) -> std::io::Result<u64> {
        Ok(self.0.len() as u64)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.1.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(std::io::Error::other("unplugged"));
        }
        let n = buf.len().min(7);
        buf[..n].copy_from_slice(&self.0[offset as usize..offset as usize + n]);
        Ok(n)
    }
    fn name(&self) -> String {
        "choppy://m.zt".into()
    }
}

#[test]
fn a_byte_source_serves_every_call() {
    let dir = TempDir::new("source");
    let path = dir.path("m.zt");
    write_sample(&path);
    let broken = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let r = Reader::open_source(Choppy(std::fs::read(&path).unwrap(), broken.clone()), 64).unwrap();
    let w = r.object("w").unwrap();
    assert_eq!(w.data().unwrap().as_slice::<f32>().unwrap()[5], 2.5);
    assert_eq!(r.verify().unwrap(), (8, 0));
    broken.store(true, std::sync::atomic::Ordering::SeqCst);
    let e = r.object("ramp").unwrap().data().unwrap().to_vec().err().unwrap();
    assert_eq!(e.status, Status::Io);
    assert!(e.message.contains("choppy://m.zt"), "{e}");
}

#[test]
fn decode_many_rows_and_append() {
    let dir = TempDir::new("many");
    let path = dir.path("m.zt");
    write_sample(&path);
    let r = Reader::open(&path).unwrap();
    let (w, ramp) = (r.object("w").unwrap(), r.object("ramp").unwrap());
    let (mut a, mut b, mut small) = (vec![0u8; 48], vec![0u8; 8192], vec![0u8; 4]);
    let mut items = [
        (w, "data", &mut a[..]),
        (ramp, "data", &mut b[..]),
        (w, "data", &mut small[..]),
    ];
    let got = r.decode_many(&mut items, 2);
    assert_eq!(got[0].as_ref().unwrap(), &48);
    assert_eq!(got[1].as_ref().unwrap(), &8192);
    assert_eq!(got[2].as_ref().err().unwrap().status, Status::Argument); // 4 bytes are too few
    assert_eq!(&a[..], w.data().unwrap().bytes().unwrap());
    assert_eq!(w.rows(1, 2).unwrap(), &w.data().unwrap().bytes().unwrap()[16..32]);

    // Ranges: part of a zstd component, part of a raw one, one past the end.
    let (mut c, mut d, mut e) = (vec![0u8; 100], vec![0u8; 8], vec![0u8; 8]);
    let mut ranges = [
        (ramp, "data", 4000u64, &mut c[..]),
        (w, "data", 8, &mut d[..]),
        (w, "data", 44, &mut e[..]),
    ];
    let got = r.decode_ranges(&mut ranges, 0);
    assert_eq!(got[0].as_ref().unwrap(), &100);
    assert_eq!(got[1].as_ref().unwrap(), &8);
    assert_eq!(got[2].as_ref().err().unwrap().status, Status::Argument); // bytes 44..52 of 48
    assert_eq!(&c[..], &b[4000..4100]);
    assert_eq!(&d[..], &a[8..16]);
    assert_eq!(w.layout(), "dense");

    // v2: append a generation, read the content digest.
    let v2 = dir.path("v2.zt");
    let mut wr = Writer::create_with(
        &v2,
        &WriterOptions {
            file_version: Some(2),
            ..Default::default()
        },
    )
    .unwrap();
    wr.add_dense("x", &[2], &[1.0f32, 2.0], Encoding::Raw).unwrap();
    wr.finish().unwrap();
    let before = Reader::open(&v2).unwrap().content_digest("sha256").unwrap();
    assert!(before.starts_with("sha256:"), "{before}");
    let mut more = Writer::append(&v2).unwrap();
    more.add_dense("y", &[1], &[3.0f32], Encoding::Raw).unwrap();
    more.finish().unwrap();
    let r2 = Reader::open(&v2).unwrap();
    assert_eq!(r2.len(), 2);
    assert_ne!(r2.content_digest("sha256").unwrap(), before);
    assert_eq!(
        r.content_digest("sha256").err().unwrap().status,
        Status::Unsupported
    ); // 1.x
}

#[test]
fn packed_f4_sparse_values_span_their_bytes() {
    let dir = TempDir::new("f4");
    let path = dir.path("f4.zt");
    let mut w = Writer::create_with(
        &path,
        &WriterOptions {
            file_version: Some(2),
            ..Default::default()
        },
    )
    .unwrap();
    let mut o = w.begin_object("s", "sparse_csr", &[2, 4]).unwrap();
    o.add_component("values", "u8", Some("f4_e2m1"), &[0x21, 0x03], Encoding::Raw)
        .unwrap();
    o.add_component("indices", "u64", None, &u64_bytes(&[0, 1, 3]), Encoding::Raw)
        .unwrap();
    o.add_component("indptr", "u64", None, &u64_bytes(&[0, 2, 3]), Encoding::Raw)
        .unwrap();
    o.end().unwrap();
    w.finish().unwrap();
    let r = Reader::from_bytes(std::fs::read(&path).unwrap()).unwrap();
    let csr = r.object("s").unwrap().csr().unwrap();
    assert_eq!(csr.nnz, 3);
    assert_eq!(csr.values, &[0x21, 0x03]); // three values in two bytes
}

#[test]
fn f64_conversions_and_cbor_attributes() {
    let dir = TempDir::new("f64");
    let path = dir.path("m.zt");
    let mut w = Writer::create(&path).unwrap();
    let cbor = [0xa1u8, 0x61, b'k', 0x18, 42]; // {"k": 42}
    w.set_file_attributes_cbor(&cbor).unwrap();
    let mut o = w.begin_object("x", "dense", &[2, 2]).unwrap();
    o.add_component(
        "data",
        "i32",
        None,
        &[1i32, -2, 3, 1 << 30]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<_>>(),
        Encoding::Zstd,
    )
    .unwrap();
    o.set_attributes_cbor(&cbor).unwrap();
    o.end().unwrap();
    w.finish().unwrap();
    let r = Reader::open(&path).unwrap();
    assert_eq!(r.attributes_cbor().unwrap(), cbor);
    let x = r.object("x").unwrap();
    assert_eq!(x.attributes_cbor().unwrap(), cbor);
    assert_eq!(x.element_count().unwrap(), 4);
    assert_eq!(x.read_f64().unwrap(), [1.0, -2.0, 3.0, (1 << 30) as f64]);
    assert_eq!(x.decode_f64().unwrap(), [1.0, -2.0, 3.0, (1 << 30) as f64]);
    assert_eq!(x.data().unwrap().read_f64().unwrap()[3], (1 << 30) as f64);
    assert_eq!(x.slice_f64(&[1, 0], &[2, 2]).unwrap(), [3.0, (1 << 30) as f64]);
    assert_eq!(x.data().unwrap().encoding_id(), None);
}

#[test]
fn open_url_passes_allow_foreign() {
    // With allow_foreign an .npy URL is refused by its format before any
    // request; without it, the open tries the closed port.
    let mut opt = HttpOptions {
        retries: 0,
        allow_foreign: true,
        ..HttpOptions::default()
    };
    let e = Reader::open_url("http://127.0.0.1:9/x.npy", &opt).err().unwrap();
    assert_eq!(e.status, Status::Unsupported, "{e}");
    assert!(e.message.contains("read from a local copy"), "{e}");
    opt.allow_foreign = false;
    let e = Reader::open_url("http://127.0.0.1:9/x.npy", &opt).err().unwrap();
    assert_eq!(e.status, Status::Io, "{e}");
}
