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
    assert!(r.manifest_json().unwrap().contains("\"adj\""));
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
    let options = WriterOptions {
        file_version: Some(2),
        ..Default::default()
    };
    let mut w = Writer::create_with(&path, &options).unwrap();
    {
        let mut o = w.begin_object("s", "sparse_csr", &[2, 4]).unwrap();
        o.add_component("values", "u8", Some("f4_e2m1"), &[0x21, 0x03], Encoding::Raw)
            .unwrap();
        let indices: Vec<u8> = [0u64, 1, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
        let indptr: Vec<u8> = [0u64, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
        o.add_component("indices", "u64", None, &indices, Encoding::Raw)
            .unwrap();
        o.add_component("indptr", "u64", None, &indptr, Encoding::Raw)
            .unwrap();
        o.end().unwrap();
    }
    w.finish().unwrap();
    let r = Reader::open(&path).unwrap();
    let values = r
        .object("s")
        .unwrap()
        .component("values")
        .unwrap()
        .read_f32()
        .unwrap();
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

/// A CBOR item, enough of it to edit a 1.x manifest (definite lengths; floats
/// and simple values kept as their bytes).
#[derive(Clone, Debug, PartialEq)]
enum Cbor {
    Uint(u64),
    Neg(u64),
    Bytes(Vec<u8>),
    Text(String),
    Array(Vec<Cbor>),
    Map(Vec<(Cbor, Cbor)>),
    Tag(u64, Box<Cbor>),
    Simple(Vec<u8>),
}

impl Cbor {
    fn decode(b: &[u8], pos: &mut usize) -> Cbor {
        let (major, info) = (b[*pos] >> 5, b[*pos] & 31);
        let start = *pos;
        *pos += 1;
        let mut arg = || -> u64 {
            let n = match info {
                0..=23 => return info as u64,
                24 => 1,
                25 => 2,
                26 => 4,
                27 => 8,
                _ => panic!("indefinite lengths are not used by the writer"),
            };
            let v = b[*pos..*pos + n].iter().fold(0u64, |v, x| v << 8 | *x as u64);
            *pos += n;
            v
        };
        match major {
            0 => Cbor::Uint(arg()),
            1 => Cbor::Neg(arg()),
            2 | 3 => {
                let n = arg() as usize;
                let s = b[*pos..*pos + n].to_vec();
                *pos += n;
                if major == 2 {
                    Cbor::Bytes(s)
                } else {
                    Cbor::Text(String::from_utf8(s).unwrap())
                }
            }
            4 => Cbor::Array((0..arg()).map(|_| Cbor::decode(b, pos)).collect()),
            5 => Cbor::Map(
                (0..arg())
                    .map(|_| (Cbor::decode(b, pos), Cbor::decode(b, pos)))
                    .collect(),
            ),
            6 => {
                let t = arg();
                Cbor::Tag(t, Box::new(Cbor::decode(b, pos)))
            }
            _ => {
                arg();
                Cbor::Simple(b[start..*pos].to_vec())
            }
        }
    }

    fn head(out: &mut Vec<u8>, major: u8, v: u64) {
        let m = major << 5;
        match v {
            0..=23 => out.push(m | v as u8),
            24..=0xff => out.extend([m | 24, v as u8]),
            0x100..=0xffff => {
                out.push(m | 25);
                out.extend((v as u16).to_be_bytes())
            }
            0x1_0000..=0xffff_ffff => {
                out.push(m | 26);
                out.extend((v as u32).to_be_bytes())
            }
            _ => {
                out.push(m | 27);
                out.extend(v.to_be_bytes())
            }
        }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Cbor::Uint(v) => Cbor::head(out, 0, *v),
            Cbor::Neg(v) => Cbor::head(out, 1, *v),
            Cbor::Bytes(s) => {
                Cbor::head(out, 2, s.len() as u64);
                out.extend(s)
            }
            Cbor::Text(s) => {
                Cbor::head(out, 3, s.len() as u64);
                out.extend(s.as_bytes())
            }
            Cbor::Array(a) => {
                Cbor::head(out, 4, a.len() as u64);
                a.iter().for_each(|x| x.encode(out))
            }
            Cbor::Map(m) => {
                Cbor::head(out, 5, m.len() as u64);
                for (k, v) in m {
                    k.encode(out);
                    v.encode(out)
                }
            }
            Cbor::Tag(t, x) => {
                Cbor::head(out, 6, *t);
                x.encode(out)
            }
            Cbor::Simple(raw) => out.extend(raw),
        }
    }

    /// The value of `key` in a map.
    fn at(&mut self, key: &str) -> &mut Cbor {
        let Cbor::Map(m) = self else {
            panic!("not a map: {self:?}")
        };
        &mut m
            .iter_mut()
            .find(|(k, _)| *k == Cbor::Text(key.into()))
            .unwrap()
            .1
    }

    fn remove(&mut self, key: &str) {
        let Cbor::Map(m) = self else { panic!("not a map") };
        m.retain(|(k, _)| *k != Cbor::Text(key.into()));
    }
}

/// Rewrites the CBOR manifest of a 1.x file in place: the manifest, its
/// u64 little-endian size and the 8-byte magic end the file.
fn edit_manifest(path: &std::path::Path, edit: impl FnOnce(&mut Cbor)) {
    let mut file = std::fs::read(path).unwrap();
    let end = file.len() - 16;
    let size = u64::from_le_bytes(file[end..end + 8].try_into().unwrap()) as usize;
    let magic = file[end + 8..].to_vec();
    let mut pos = 0;
    let mut manifest = Cbor::decode(&file[end - size..end], &mut pos);
    assert_eq!(pos, size);
    edit(&mut manifest);
    file.truncate(end - size);
    let mut bytes = Vec::new();
    manifest.encode(&mut bytes);
    file.extend(&bytes);
    file.extend((bytes.len() as u64).to_le_bytes());
    file.extend(magic);
    std::fs::write(path, file).unwrap();
}

/// The manifest entry of component `role` of object `name`.
fn component_entry<'m>(manifest: &'m mut Cbor, name: &str, role: &str) -> &'m mut Cbor {
    manifest.at("objects").at(name).at("components").at(role)
}

#[test]
fn sizes_a_file_claims_beyond_the_cap_are_refused_before_allocating() {
    // A 4096-byte zstd object whose manifest claims 3 * 2^62 bytes (shape
    // and uncompressed_length agree, so the file opens). The buffers were
    // sized from that claim: to_vec and the conversions panicked ("capacity
    // overflow"), a claim under isize::MAX aborted the process.
    let dir = TempDir::new("claims");
    let path = dir.path("m.zt");
    let ramp: Vec<u8> = (0..4096).map(|i| (i % 7) as u8).collect();
    let mut w = Writer::create(&path).unwrap();
    w.add_dense("huge", &[4096], &ramp, Encoding::Zstd).unwrap();
    w.add_dense("fine", &[4096], &ramp, Encoding::Zstd).unwrap();
    w.finish().unwrap();
    let claim = 3u64 << 62;
    edit_manifest(&path, |m| {
        *m.at("objects").at("huge").at("shape") = Cbor::Array(vec![Cbor::Uint(claim)]);
        *component_entry(m, "huge", "data").at("uncompressed_length") = Cbor::Uint(claim);
    });
    let r = Reader::open(&path).unwrap();
    let huge = r.object("huge").unwrap();
    let data = huge.data().unwrap();
    assert_eq!(data.decoded_size().unwrap(), claim); // what the file states
    let limit = |e: ztensor::Error| {
        assert_eq!(e.status, Status::Limit, "{e}");
        assert!(e.message.contains("exceeds the decode limit"), "{e}");
    };
    limit(data.read_size().unwrap_err());
    limit(data.to_vec().unwrap_err());
    limit(data.read_f32().unwrap_err());
    limit(data.read_f64().unwrap_err());
    limit(huge.read_f32().unwrap_err());
    limit(huge.read_f64().unwrap_err());
    limit(huge.decode_f32().unwrap_err());
    limit(huge.decode_f64().unwrap_err());
    limit(huge.slice(&[0], &[claim]).unwrap_err());
    limit(huge.slice_f32(&[0], &[claim]).unwrap_err());
    limit(huge.slice_f64(&[0], &[16]).unwrap_err());
    // The other object reads as ever.
    let fine = r.object("fine").unwrap();
    assert_eq!(fine.data().unwrap().read_size().unwrap(), 4096);
    assert_eq!(fine.data().unwrap().to_vec().unwrap(), ramp);
    assert_eq!(fine.read_f32().unwrap()[13], (13 % 7) as f32);

    // Without a cap below it, the claim is a buffer the process cannot
    // have: NoMemory, not an abort or a panic.
    let r = Reader::open_with(
        &path,
        &ztensor::OpenOptions {
            max_decoded_bytes: u64::MAX,
            ..Default::default()
        },
    )
    .unwrap();
    let huge = r.object("huge").unwrap();
    assert_eq!(huge.data().unwrap().read_size().unwrap(), claim);
    for e in [
        huge.data().unwrap().to_vec().unwrap_err(),
        huge.data().unwrap().read_f32().unwrap_err(),
    ] {
        assert_eq!(e.status, Status::NoMemory, "{e}");
    }
    // The dense results' bytes (3 * 2^62 values of 4 or 8 bytes) overflow
    // 64 bits: zt_object_decode_capacity refuses them, Limit.
    for e in [huge.read_f64().unwrap_err(), huge.decode_f32().unwrap_err()] {
        assert_eq!(e.status, Status::Limit, "{e}");
    }

    // A real component over a cap set below it: the same refusal.
    let r = Reader::open_with(
        &path,
        &ztensor::OpenOptions {
            max_decoded_bytes: 4095,
            ..Default::default()
        },
    )
    .unwrap();
    let fine = r.object("fine").unwrap();
    limit(fine.data().unwrap().to_vec().unwrap_err());
    limit(fine.data().unwrap().read_f32().unwrap_err());
    limit(fine.read_f32().unwrap_err());
    limit(fine.slice_f32(&[0], &[4]).unwrap_err());
}

#[test]
fn sizes_known_only_by_decoding_are_read_through_the_mapping() {
    // A 1.1.0 zstd component outside a dense object may lack
    // uncompressed_length: to_vec and read_f32 failed Unsupported, while
    // bytes() (zt_component_map) decodes it.
    let dir = TempDir::new("unsized");
    let path = dir.path("m.zt");
    let blob: Vec<u8> = (0..3000).map(|i| (i % 11) as u8).collect();
    let mut w = Writer::create(&path).unwrap();
    let mut o = w.begin_object("o", "my_format", &[1]).unwrap();
    o.add_component("blob", "u8", None, &blob, Encoding::Zstd)
        .unwrap();
    o.end().unwrap();
    w.finish().unwrap();
    edit_manifest(&path, |m| {
        *m.at("version") = Cbor::Text("1.1.0".into());
        component_entry(m, "o", "blob").remove("uncompressed_length");
    });
    let r = Reader::open(&path).unwrap();
    let c = r.object("o").unwrap().component("blob").unwrap();
    assert_eq!(c.decoded_size().unwrap_err().status, Status::Unsupported);
    assert_eq!(c.read_size().unwrap_err().status, Status::Unsupported);
    assert_eq!(c.bytes().unwrap(), blob);
    assert_eq!(c.to_vec().unwrap(), blob);
    let want: Vec<f32> = blob.iter().map(|&b| b as f32).collect();
    assert_eq!(c.read_f32().unwrap(), want);
    assert_eq!(c.read_f64().unwrap()[10], 10.0);
    // Its decoding is still bounded by the cap.
    let r = Reader::open_with(
        &path,
        &ztensor::OpenOptions {
            max_decoded_bytes: 1000,
            ..Default::default()
        },
    )
    .unwrap();
    let c = r.object("o").unwrap().component("blob").unwrap();
    assert_eq!(c.to_vec().unwrap_err().status, Status::Limit);
    assert_eq!(c.read_f32().unwrap_err().status, Status::Limit);
}

/// A file in memory behind ByteSource that counts the bytes read.
struct Counted(Vec<u8>, std::sync::Arc<std::sync::atomic::AtomicU64>);

impl ztensor::ByteSource for Counted {
    fn size(&self) -> std::io::Result<u64> {
        Ok(self.0.len() as u64)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.0.len() - offset as usize);
        buf[..n].copy_from_slice(&self.0[offset as usize..offset as usize + n]);
        self.1.fetch_add(n as u64, std::sync::atomic::Ordering::SeqCst);
        Ok(n)
    }
}

/// Noise that zstd cannot shrink, as f32 values.
fn noise(n: usize) -> Vec<f32> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32
        })
        .collect()
}

#[test]
fn slices_read_only_the_box_of_zstd_data() {
    // A slice learned the element width from zt_dense_view, which decodes
    // a zstd component whole: every frame was read, and damage outside the
    // box failed the slice.
    let dir = TempDir::new("zslice");
    let values = noise(1024 * 1024);
    for version in [0, 2] {
        let path = dir.path(&format!("v{version}.zt"));
        let options = WriterOptions {
            frame_size: Some(16384),
            file_version: Some(version),
            ..Default::default()
        };
        let mut w = Writer::create_with(&path, &options).unwrap();
        w.add_dense("x", &[1024, 1024], &values, Encoding::Zstd).unwrap();
        w.finish().unwrap();
        let file = std::fs::read(&path).unwrap();
        assert!(file.len() > 3 << 20, "{}", file.len()); // noise: zstd cannot shrink it

        let read = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let r = Reader::open_source(Counted(file, read.clone()), 0).unwrap();
        let opened = read.load(std::sync::atomic::Ordering::SeqCst);
        let x = r.object("x").unwrap();
        assert_eq!(x.slice_f32(&[0, 0], &[1, 1024]).unwrap(), values[..1024]);
        assert_eq!(x.slice(&[1, 2], &[2, 4]).unwrap(), f32_bytes(&values[1026..1028]));
        let sliced = read.load(std::sync::atomic::Ordering::SeqCst) - opened;
        // The frames holding the box (for 1.2, with the library's read-ahead
        // of a 1 MiB guess), not the 4 MiB component.
        assert!(
            sliced < 2 << 20,
            "file_version {version}: the slices read {sliced} bytes"
        );
    }

    // The second half of a 1.2 file's stored bytes zeroed: rows in the
    // first half still slice; the whole component does not decode.
    let path = dir.path("v0.zt");
    let (mut offset, mut length) = (0, 0);
    edit_manifest(&path, |m| {
        let c = component_entry(m, "x", "data");
        let Cbor::Uint(o) = *c.at("offset") else { panic!() };
        let Cbor::Uint(l) = *c.at("length") else { panic!() };
        (offset, length) = (o as usize, l as usize);
    });
    let mut damaged = std::fs::read(&path).unwrap();
    damaged[offset + length / 2..offset + length].fill(0);
    std::fs::write(&path, &damaged).unwrap();
    let r = Reader::open(&path).unwrap();
    let x = r.object("x").unwrap();
    assert_eq!(
        x.slice_f64(&[3, 0], &[4, 2]).unwrap(),
        [values[3072] as f64, values[3073] as f64]
    );
    assert_eq!(x.slice(&[0, 0], &[1, 1]).unwrap(), f32_bytes(&values[..1]));
    assert_eq!(x.dense().unwrap_err().status, Status::Invalid);
    assert_eq!(
        x.slice_f32(&[1023, 0], &[1024, 1]).unwrap_err().status,
        Status::Invalid
    );
}

#[test]
fn batches_refuse_objects_of_another_reader() {
    // decode_many and decode_ranges name objects by index: an Object of
    // another Reader decoded this reader's object at the same index.
    let dir = TempDir::new("foreignobj");
    let (a, b) = (dir.path("a.zt"), dir.path("b.zt"));
    for (path, v) in [(&a, 1.0f32), (&b, 2.0)] {
        let mut w = Writer::create(path).unwrap();
        w.add_dense("x", &[2], &[v, v], Encoding::Raw).unwrap();
        w.finish().unwrap();
    }
    let (ra, rb) = (Reader::open(&a).unwrap(), Reader::open(&b).unwrap());
    let (xa, xb) = (ra.object("x").unwrap(), rb.object("x").unwrap());
    let (mut one, mut two) = (vec![0u8; 8], vec![0u8; 8]);
    let mut items = [(xa, "data", &mut one[..]), (xb, "data", &mut two[..])];
    let got = ra.decode_many(&mut items, 1);
    assert_eq!(got[0].as_ref().unwrap(), &8);
    let e = got[1].as_ref().unwrap_err();
    assert_eq!(e.status, Status::Argument, "{e}");
    assert!(e.message.contains("another Reader"), "{e}");
    assert_eq!(one, f32_bytes(&[1.0, 1.0]));
    assert_eq!(two, [0u8; 8]); // nothing written
    let mut ranges = [(xb, "data", 4u64, &mut two[..4]), (xa, "data", 0, &mut one[..4])];
    let got = ra.decode_ranges(&mut ranges, 1);
    assert_eq!(got[0].as_ref().unwrap_err().status, Status::Argument);
    assert_eq!(got[1].as_ref().unwrap(), &4);
    assert_eq!(two, [0u8; 8]);
    // Its own reader takes it.
    let mut items = [(xb, "data", &mut two[..])];
    assert_eq!(rb.decode_many(&mut items, 1)[0].as_ref().unwrap(), &8);
    assert_eq!(two, f32_bytes(&[2.0, 2.0]));
}

#[test]
fn open_source_and_open_url_take_max_decoded_bytes() {
    let dir = TempDir::new("cap");
    let path = dir.path("m.zt");
    write_sample(&path); // "ramp": 8192 decoded bytes, zstd
    let file = std::fs::read(&path).unwrap();
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let options = ztensor::SourceOptions {
        max_decoded_bytes: 8191,
        ..Default::default()
    };
    let r = Reader::open_source_with(Counted(file.clone(), counter.clone()), &options).unwrap();
    let e = r.object("ramp").unwrap().data().unwrap().bytes().unwrap_err();
    assert_eq!(e.status, Status::Limit, "{e}");
    assert!(e.message.contains("8191"), "{e}");
    let r =
        Reader::open_source_with(Counted(file.clone(), counter), &ztensor::SourceOptions::default()).unwrap();
    assert_eq!(
        r.object("ramp").unwrap().data().unwrap().bytes().unwrap().len(),
        8192
    );

    let url = serve(file);
    let mut http = HttpOptions {
        retries: 0,
        max_decoded_bytes: 8191,
        ..HttpOptions::default()
    };
    let r = Reader::open_url(&url, &http).unwrap();
    let e = r.object("ramp").unwrap().data().unwrap().bytes().unwrap_err();
    assert_eq!(e.status, Status::Limit, "{e}");
    http.max_decoded_bytes = 0;
    let r = Reader::open_url(&url, &http).unwrap();
    assert_eq!(
        r.object("ramp").unwrap().data().unwrap().bytes().unwrap().len(),
        8192
    );
}

/// Serves `file` at an http://127.0.0.1 URL, answering range requests
/// ("bytes=a-b", "bytes=a-", "bytes=-n") with 206, one connection at a
/// time, until the process ends.
fn serve(file: Vec<u8>) -> String {
    use std::io::{BufRead, BufReader};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut range = None;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(r) = lower.strip_prefix("range: bytes=") {
                    range = Some(r.trim().to_string());
                }
            }
            let n = file.len();
            let (a, b) = match range.as_deref().and_then(|r| r.split_once('-')) {
                Some(("", k)) => (n.saturating_sub(k.parse().unwrap()), n - 1),
                Some((a, "")) => (a.parse().unwrap(), n - 1),
                Some((a, b)) => (
                    a.parse().unwrap(),
                    b.split(',').next().unwrap().parse::<usize>().unwrap().min(n - 1),
                ),
                None => (0, n - 1),
            };
            let head = format!(
                "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{b}/{n}\r\n\
                 Content-Length: {}\r\nETag: \"v1\"\r\nConnection: close\r\n\r\n",
                b + 1 - a
            );
            stream.write_all(head.as_bytes()).ok();
            stream.write_all(&file[a..=b]).ok();
        }
    });
    format!("http://127.0.0.1:{port}/m.zt")
}

#[test]
fn messages_show_no_secret_of_a_url_or_header() {
    // A NUL byte in the URL or a header: the message echoed the whole text.
    let url = "https://alice:hunter2@example.com/m.zt?X-Sig=SECRET\0";
    let e = Reader::open_url(url, &HttpOptions::default()).err().unwrap();
    assert_eq!(e.status, Status::Argument);
    for secret in ["hunter2", "SECRET", "alice"] {
        assert!(!e.message.contains(secret), "{e}");
    }
    let http = HttpOptions {
        headers: vec!["X-Trace: 1".into(), "Authorization: Bearer SECRET\0".into()],
        ..HttpOptions::default()
    };
    let e = Reader::open_url("https://example.com/m.zt", &http).err().unwrap();
    assert_eq!(e.status, Status::Argument);
    assert!(
        !e.message.contains("SECRET") && !e.message.contains("Bearer"),
        "{e}"
    );
    assert!(e.message.contains("headers[1]"), "{e}");

    // A ByteSource named by a pre-signed URL: the library names it without
    // user info and query; a name with a NUL is not passed on at all.
    struct Named(&'static str);
    impl ztensor::ByteSource for Named {
        fn size(&self) -> std::io::Result<u64> {
            Ok(1 << 20)
        }
        fn read_at(&self, _: u64, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("unplugged"))
        }
        fn name(&self) -> String {
            self.0.into()
        }
    }
    let e = Reader::open_source(Named("https://alice:hunter2@example.com/m.zt?X-Sig=SECRET"), 0)
        .err()
        .unwrap();
    assert_eq!(e.status, Status::Io);
    assert!(e.message.contains("https://example.com/m.zt"), "{e}");
    for secret in ["hunter2", "SECRET", "alice"] {
        assert!(!e.message.contains(secret), "{e}");
    }
    let e = Reader::open_source(Named("https://alice:hunter2@exa\0mple.com/?X-Sig=SECRET"), 0)
        .err()
        .unwrap();
    for secret in ["hunter2", "SECRET", "alice"] {
        assert!(!e.message.contains(secret), "{e}");
    }
}

#[test]
fn file_version_is_0_or_2() {
    // The documentation said "0 or 1" meant 1.2.0; 1 is refused.
    let dir = TempDir::new("fileversion");
    for (v, want) in [
        (None, Some("1.2.0")),
        (Some(0), Some("1.2.0")),
        (Some(2), Some("2")),
        (Some(1), None),
    ] {
        let path = dir.path("m.zt");
        let options = WriterOptions {
            file_version: v,
            ..Default::default()
        };
        match (Writer::create_with(&path, &options), want) {
            (Ok(mut w), Some(want)) => {
                w.add_dense("x", &[1], &[1.0f32], Encoding::Raw).unwrap();
                w.finish().unwrap();
                assert_eq!(Reader::open(&path).unwrap().file_version(), want);
            }
            (Err(e), None) => assert_eq!(e.status, Status::Argument, "{e}"),
            (got, _) => panic!("file_version {v:?}: {:?}", got.err()),
        }
    }
}

/// A CSR object of `shape` with no stored values (a file of a few hundred
/// bytes whatever shape it claims).
fn add_empty_csr(w: &mut Writer, name: &str, shape: &[u64]) {
    let mut o = w.begin_object(name, "sparse_csr", shape).unwrap();
    o.add_component("values", "f32", None, &[], Encoding::Raw)
        .unwrap();
    o.add_component("indices", "u64", None, &[], Encoding::Raw)
        .unwrap();
    let indptr = vec![0u64; shape[0] as usize + 1];
    o.add_component("indptr", "u64", None, &u64_bytes(&indptr), Encoding::Raw)
        .unwrap();
    o.end().unwrap();
}

#[test]
fn a_claimed_dense_size_over_the_cap_is_refused_before_allocating() {
    // decode_f32 sized its output from product(shape): a CSR of shape
    // [1, 2^32] with no values allocated (and the library zeroed) 16 GiB
    // under a cap of 1 MiB; [1, 2^40] failed NoMemory instead of Limit.
    let dir = TempDir::new("decodecap");
    let path = dir.path("m.zt");
    let mut w = Writer::create(&path).unwrap();
    add_empty_csr(&mut w, "wide", &[1, 1 << 32]);
    add_empty_csr(&mut w, "wider", &[1, 1 << 40]);
    add_empty_csr(&mut w, "small", &[2, 3]);
    w.finish().unwrap();
    let r = Reader::open_with(
        &path,
        &ztensor::OpenOptions {
            max_decoded_bytes: 1 << 20,
            ..Default::default()
        },
    )
    .unwrap();
    for name in ["wide", "wider"] {
        let o = r.object(name).unwrap();
        for e in [o.decode_f32().unwrap_err(), o.decode_f64().unwrap_err()] {
            assert_eq!(e.status, Status::Limit, "{name}: {e}");
            assert!(e.message.contains("decode limit"), "{e}");
        }
        // Not dense: the read's own refusal, nothing allocated.
        for e in [o.read_f32().unwrap_err(), o.read_f64().unwrap_err()] {
            assert_eq!(e.status, Status::Argument, "{name}: {e}");
        }
    }
    assert_eq!(r.object("small").unwrap().decode_f64().unwrap(), [0.0; 6]);
}

#[test]
fn slices_of_objects_that_are_not_dense_are_the_librarys_refusal() {
    // The slice buffer was allocated from the claimed shape first: a CSR
    // of shape [1, 2^62] failed NoMemory, not the library's Argument.
    let dir = TempDir::new("sparseslice");
    let path = dir.path("m.zt");
    let mut w = Writer::create(&path).unwrap();
    add_empty_csr(&mut w, "s", &[1, 1 << 62]);
    w.finish().unwrap();
    let r = Reader::open(&path).unwrap();
    let s = r.object("s").unwrap();
    let (begin, end) = ([0, 0], [1, 1 << 62]);
    for e in [
        s.slice(&begin, &end).unwrap_err(),
        s.slice_f32(&begin, &end).unwrap_err(),
        s.slice_f64(&begin, &end).unwrap_err(),
    ] {
        assert_eq!(e.status, Status::Argument, "{e}");
        assert!(e.message.contains("dense"), "{e}");
    }
}

#[test]
fn empty_components_view_as_empty_slices() {
    // as_slice::<f32> of an empty component failed "not aligned": the
    // library's empty slice need not be aligned for f32.
    let dir = TempDir::new("emptyslice");
    let path = dir.path("m.zt");
    let mut w = Writer::create(&path).unwrap();
    w.add_dense::<f32>("e", &[0], &[], Encoding::Raw).unwrap();
    w.add_dense::<f64>("z", &[2, 0], &[], Encoding::Zstd).unwrap();
    w.add_dense::<u64>("u", &[0, 5], &[], Encoding::Raw).unwrap();
    w.finish().unwrap();
    for copy in [false, true] {
        let r = Reader::open_with(
            &path,
            &ztensor::OpenOptions {
                copy,
                ..Default::default()
            },
        )
        .unwrap();
        let e: &[f32] = r.object("e").unwrap().data().unwrap().as_slice().unwrap();
        assert!(e.is_empty());
        let z: &[f64] = r.object("z").unwrap().data().unwrap().as_slice().unwrap();
        assert!(z.is_empty());
        let u: &[u64] = r.object("u").unwrap().data().unwrap().as_slice().unwrap();
        assert!(u.is_empty());
        // The dtype is still checked.
        let wrong = r.object("e").unwrap().data().unwrap().as_slice::<u32>();
        assert_eq!(wrong.unwrap_err().status, Status::Argument);
        assert!(r.object("e").unwrap().read_f32().unwrap().is_empty());
    }
}

#[test]
fn a_failed_object_end_cancels_the_object_and_the_writer_goes_on() {
    // end() marked the object closed before zt_writer_end_object refused
    // it (a component still open): nothing cancelled it, every later call
    // failed ZT_ERR_STATE and finish() lost the file.
    let dir = TempDir::new("failedend");
    let path = dir.path("m.zt");
    let mut w = Writer::create(&path).unwrap();
    w.add_dense("keep", &[2], &[1.0f32, 2.0], Encoding::Raw).unwrap();
    let mut o = w.begin_object("x", "dense", &[2]).unwrap();
    drop(o.begin_component("data", "f32", None, 8, Encoding::Raw).unwrap());
    let e = o.end().unwrap_err();
    assert_eq!(e.status, Status::State, "{e}");
    w.add_dense("y", &[1], &[3.0f32], Encoding::Raw).unwrap();
    // A component abandoned after some of its bytes: the same.
    let mut o = w.begin_object("x", "dense", &[2]).unwrap();
    let mut c = o.begin_component("data", "f32", None, 8, Encoding::Zstd).unwrap();
    c.write_all(&f32_bytes(&[1.0])).unwrap();
    drop(c);
    assert_eq!(o.end().unwrap_err().status, Status::State);
    // An object refused by its format's rules (no "data"): dropped too.
    let o = w.begin_object("bad", "dense", &[2]).unwrap();
    assert_eq!(o.end().unwrap_err().status, Status::Invalid);
    // A component whose end is refused is dropped; its object goes on.
    let mut o = w.begin_object("z", "dense", &[1]).unwrap();
    let c = o.begin_component("data", "f32", None, 4, Encoding::Raw).unwrap();
    assert_eq!(c.end().unwrap_err().status, Status::Invalid);
    o.add_component("data", "f32", None, &f32_bytes(&[4.0]), Encoding::Raw)
        .unwrap();
    o.end().unwrap();
    w.finish().unwrap();
    let r = Reader::open(&path).unwrap();
    let names: Vec<&str> = r.objects().map(|o| o.name()).collect();
    assert_eq!(names, ["keep", "y", "z"]);
    assert_eq!(r.object("keep").unwrap().read_f32().unwrap(), [1.0, 2.0]);
    assert_eq!(r.object("y").unwrap().read_f32().unwrap(), [3.0]);
    assert_eq!(r.object("z").unwrap().read_f32().unwrap(), [4.0]);
    assert_eq!(r.verify().unwrap().0, 3);
}

/// A file in memory behind ByteSource that checks that every buffer it is
/// handed is initialised (zeroed) and counts its drops.
struct Checked {
    file: Vec<u8>,
    size_fails: bool,
    dirty: std::sync::Arc<std::sync::atomic::AtomicU64>,
    drops: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl ztensor::ByteSource for Checked {
    fn size(&self) -> std::io::Result<u64> {
        if self.size_fails {
            return Err(std::io::Error::other("no size"));
        }
        Ok(self.file.len() as u64)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.iter().any(|&b| b != 0) {
            self.dirty.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        let n = buf.len().min(self.file.len() - offset as usize);
        buf[..n].copy_from_slice(&self.file[offset as usize..offset as usize + n]);
        Ok(n)
    }
}

impl Drop for Checked {
    fn drop(&mut self) {
        self.drops.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn a_byte_source_gets_zeroed_buffers_and_is_dropped_once() {
    use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
    use std::sync::Arc;
    let dir = TempDir::new("checkedsource");
    let path = dir.path("m.zt");
    write_sample(&path);
    let file = std::fs::read(&path).unwrap();
    let (dirty, drops) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let source = |size_fails| Checked {
        file: file.clone(),
        size_fails,
        dirty: dirty.clone(),
        drops: drops.clone(),
    };
    {
        let r = Reader::open_source(source(false), 1 << 20).unwrap();
        for o in r.objects() {
            o.decode_f64().unwrap();
            for c in o.components() {
                c.to_vec().unwrap();
            }
        }
        let w = r.object("w").unwrap();
        let mut items = [(w, "data", &mut [0u8; 48][..])];
        assert_eq!(r.decode_many(&mut items, 2), [Ok(48)]);
        assert_eq!(drops.load(SeqCst), 0);
    }
    assert_eq!(dirty.load(SeqCst), 0, "read_at saw uninitialised bytes");
    assert_eq!(drops.load(SeqCst), 1);
    // A failed open drops the source once too.
    let e = Reader::open_source(source(true), 0).err().unwrap();
    assert_eq!(e.status, Status::Io, "{e}");
    assert_eq!(drops.load(SeqCst), 2);
}

#[test]
fn decode_many_to_vecs_gives_each_item_its_bytes_or_its_error() {
    let dir = TempDir::new("tovecs");
    let (path, other) = (dir.path("m.zt"), dir.path("other.zt"));
    write_sample(&path);
    let mut w = Writer::create(&other).unwrap();
    w.add_dense("x", &[2], &[1.0f32, 2.0], Encoding::Raw).unwrap();
    let big: Vec<u16> = (0..(9 << 19)).map(|i| (i * 7 % 65521) as u16).collect(); // 9 MiB
    w.add_dense("big", &[big.len() as u64], &big, Encoding::Raw)
        .unwrap();
    w.add_dense("bigz", &[big.len() as u64], &big, Encoding::Zstd)
        .unwrap();
    w.finish().unwrap();
    let (r, o) = (Reader::open(&path).unwrap(), Reader::open(&other).unwrap());
    let (wt, ramp, x) = (
        r.object("w").unwrap(),
        r.object("ramp").unwrap(),
        o.object("x").unwrap(),
    );
    let (ob, obz) = (o.object("big").unwrap(), o.object("bigz").unwrap());
    let got = r.decode_many_to_vecs(&[(wt, "data"), (ramp, "data"), (wt, "nope"), (x, "data")], 2);
    assert_eq!(got[0].as_ref().unwrap(), wt.data().unwrap().bytes().unwrap());
    assert_eq!(got[1].as_ref().unwrap(), &ramp.data().unwrap().to_vec().unwrap()); // zstd
    assert_eq!(got[2].as_ref().unwrap_err().status, Status::NotFound);
    let e = got[3].as_ref().unwrap_err();
    assert!(
        e.status == Status::Argument && e.message.contains("another Reader"),
        "{e}"
    );
    let got = o.decode_many_to_vecs(&[(ob, "data"), (obz, "data"), (x, "data")], 0);
    let want: Vec<u8> = big.iter().flat_map(|v| v.to_le_bytes()).collect();
    assert!(got[0].as_ref().unwrap() == &want && got[1].as_ref().unwrap() == &want);
    assert_eq!(got[2].as_ref().unwrap(), &f32_bytes(&[1.0, 2.0]));
    // Over the reader's cap: refused before anything is allocated, alone.
    let capped = Reader::open_with(
        &other,
        &ztensor::OpenOptions {
            max_decoded_bytes: 1 << 20,
            ..Default::default()
        },
    )
    .unwrap();
    let (cz, cx) = (capped.object("bigz").unwrap(), capped.object("x").unwrap());
    let got = capped.decode_many_to_vecs(&[(cz, "data"), (cx, "data")], 0);
    assert_eq!(got[0].as_ref().map(Vec::len).unwrap_err().status, Status::Limit); // 9 MiB of zstd
    assert_eq!(got[1].as_ref().unwrap(), &f32_bytes(&[1.0, 2.0]));
}

/// The VmFlags of the mapping of this process that holds `address`.
fn vm_flags_at(address: usize) -> Option<String> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut inside = false;
    for line in smaps.lines() {
        let range = line.split(' ').next().unwrap_or("");
        if let Some((a, b)) = range.split_once('-') {
            if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                inside = a <= address && address < b;
                continue;
            }
        }
        if inside && line.starts_with("VmFlags:") {
            return Some(line.to_string());
        }
    }
    None
}

#[test]
fn vectors_of_4_mib_or_more_are_advised_for_huge_pages() {
    if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists() {
        eprintln!("SKIPPED: this kernel has no transparent huge pages to advise");
        return;
    }
    let dir = TempDir::new("hugevecs");
    let path = dir.path("m.zt");
    let mut w = Writer::create(&path).unwrap();
    w.add_dense("big", &[9 << 20], &vec![3u8; 9 << 20], Encoding::Raw)
        .unwrap();
    w.add_dense("small", &[1 << 20], &vec![5u8; 1 << 20], Encoding::Raw)
        .unwrap();
    w.finish().unwrap();
    let r = Reader::open(&path).unwrap();
    let (big, small) = (r.object("big").unwrap(), r.object("small").unwrap());
    let huge = |v: &Vec<u8>| {
        let page = (v.as_ptr() as usize).next_multiple_of(2 << 20);
        vm_flags_at(page)
            .expect("the vector's mapping")
            .split_whitespace()
            .any(|f| f == "hg")
    };
    let owned = big.data().unwrap().to_vec().unwrap();
    assert!(
        huge(&owned),
        "to_vec of 9 MiB: {:?}",
        vm_flags_at(owned.as_ptr() as usize + (2 << 20))
    );
    let got = r.decode_many_to_vecs(&[(big, "data"), (small, "data")], 0);
    let (b, s) = (got[0].as_ref().unwrap(), got[1].as_ref().unwrap());
    assert!(huge(b) && b.iter().all(|&x| x == 3));
    assert!(s.len() == 1 << 20 && s.iter().all(|&x| x == 5));
}
