//! The declarations of this crate against the C ABI they bind:
//! - every ZT_API function of include/ztensor.h is declared in src/lib.rs
//!   with the same parameter and return types, and nothing else is;
//! - the installed library exports exactly those functions (its export map
//!   is `zt_*`);
//! - every struct has the C compiler's size and field offsets (a C program
//!   built with $CC against the header prints them).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const LIB_RS: &str = include_str!("../src/lib.rs");

fn header() -> String {
    let path = env!("ZTENSOR_HEADER");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("*/").expect("unterminated comment") + start + 2;
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A C type as this crate spells it in Rust.
fn rust_type(c: &str) -> String {
    let c = squash(&c.replace('*', " * ")).replace(" *", "*");
    let fixed = match c.as_str() {
        "void" => Some("()"),
        "char*" => Some("*mut c_char"),
        "const char*" => Some("*const c_char"),
        "void*" => Some("*mut c_void"),
        "const void*" => Some("*const c_void"),
        "const void**" => Some("*mut *const c_void"),
        "const char**" => Some("*mut *const c_char"),
        "size_t" => Some("usize"),
        "size_t*" => Some("*mut usize"),
        "uint64_t" => Some("u64"),
        "uint64_t*" => Some("*mut u64"),
        "const uint64_t*" => Some("*const u64"),
        "uint32_t" => Some("u32"),
        "unsigned" => Some("c_uint"),
        "double*" => Some("*mut f64"),
        "float*" => Some("*mut f32"),
        "zt_status" => Some("zt_status"),
        _ => None,
    };
    if let Some(t) = fixed {
        return t.to_string();
    }
    let (is_const, rest) = match c.strip_prefix("const ") {
        Some(r) => (true, r),
        None => (false, c.as_str()),
    };
    let stars = rest.chars().rev().take_while(|&ch| ch == '*').count();
    let name = &rest[..rest.len() - stars];
    assert!(name.starts_with("zt_"), "no Rust spelling for C type {c:?}");
    if stars == 0 {
        return name.to_string();
    }
    let inner = format!("{}{name}", if is_const { "*const " } else { "*mut " });
    format!("{}{inner}", "*mut ".repeat(stars - 1))
}

/// "const zt_reader* r" -> ("const zt_reader*", "r")
fn split_param(p: &str) -> (String, String) {
    let p = squash(p);
    let at = p
        .rfind(|ch: char| ch == ' ' || ch == '*')
        .expect("parameter without a name")
        + 1;
    (p[..at].trim().to_string(), p[at..].to_string())
}

/// name -> (parameter types, return type), from the header's ZT_API lines.
fn header_functions() -> BTreeMap<String, (Vec<String>, String)> {
    let text = strip_comments(&header());
    let mut out = BTreeMap::new();
    for chunk in text.split("ZT_API").skip(1) {
        // The macro's own definitions (#define ZT_API ...) are not declarations.
        let Some(end) = chunk.find(';') else { continue };
        let decl = &chunk[..end];
        if decl.contains('#') || decl.contains("__attribute__") || !decl.contains('(') {
            continue;
        }
        let open = decl.find('(').unwrap();
        let (ret, name) = split_param(&decl[..open]);
        let params = &decl[open + 1..decl.rfind(')').unwrap()];
        let types = if squash(params).is_empty() || squash(params) == "void" {
            vec![]
        } else {
            params.split(',').map(|p| rust_type(&split_param(p).0)).collect()
        };
        out.insert(name, (types, rust_type(&ret)));
    }
    out
}

/// The same from src/lib.rs's extern block.
fn declared_functions() -> BTreeMap<String, (Vec<String>, String)> {
    let block = &LIB_RS[LIB_RS.find("extern \"C\" {").expect("no extern block")..];
    let block = &block[..block.find("\n}\n").unwrap()];
    let mut out = BTreeMap::new();
    for line in block.lines().map(str::trim).filter(|l| l.starts_with("pub fn ")) {
        let line = line.trim_end_matches(';');
        let name = &line[7..line.find('(').unwrap()];
        let params = &line[line.find('(').unwrap() + 1..line.rfind(')').unwrap()];
        let types = if params.is_empty() {
            vec![]
        } else {
            params
                .split(", ")
                .map(|p| p.split_once(": ").unwrap().1.to_string())
                .collect()
        };
        let ret = line
            .rsplit_once(") -> ")
            .map(|(_, r)| r.to_string())
            .unwrap_or_else(|| "()".into());
        out.insert(name.to_string(), (types, ret));
    }
    out
}

#[test]
fn every_header_function_is_declared_with_its_signature() {
    let header = header_functions();
    let declared = declared_functions();
    assert!(
        header.len() > 70,
        "only {} functions found in the header",
        header.len()
    );
    for (name, sig) in &header {
        match declared.get(name) {
            None => panic!("{name} is in ztensor.h but not in ztensor-sys (run generate.py)"),
            Some(d) => assert_eq!(d, sig, "{name}: declared {d:?}, the header says {sig:?}"),
        }
    }
    for name in declared.keys() {
        assert!(
            header.contains_key(name),
            "{name} is declared but not in ztensor.h"
        );
    }
}

#[test]
fn the_library_exports_exactly_the_header_functions() {
    let dir = env!("ZTENSOR_LIB_DIR");
    if dir.is_empty() {
        eprintln!("skipped: the library was found by the linker's default paths");
        return;
    }
    let lib = Path::new(dir).join("libztensor.so");
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .expect("nm runs");
    assert!(out.status.success(), "nm -D {}", lib.display());
    let mut exported: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .map(|s| s.split('@').next().unwrap().to_string())
        .filter(|s| s.starts_with("zt_"))
        .collect();
    exported.sort();
    exported.dedup();
    let header: Vec<String> = header_functions().into_keys().collect();
    assert_eq!(
        exported,
        header,
        "exports of {} differ from the header",
        lib.display()
    );
}

macro_rules! layout {
    ($($s:ident { $($f:ident),* }),* $(,)?) => {{
        let mut rust = String::new();
        let mut c = String::from("#include <stddef.h>\n#include <stdio.h>\n#include <ztensor.h>\nint main(void) {\n");
        $(
            rust += &format!("{} {}\n", stringify!($s), std::mem::size_of::<ztensor_sys::$s>());
            c += &format!("  printf(\"{} %zu\\n\", sizeof({}));\n", stringify!($s), stringify!($s));
            $(
                rust += &format!("{}.{} {}\n", stringify!($s), stringify!($f),
                                 std::mem::offset_of!(ztensor_sys::$s, $f));
                c += &format!("  printf(\"{}.{} %zu\\n\", offsetof({}, {}));\n",
                              stringify!($s), stringify!($f), stringify!($s), stringify!($f));
            )*
        )*
        c += "  return 0;\n}\n";
        (rust, c)
    }};
}

#[test]
fn every_struct_has_the_c_layout() {
    let (rust, c) = layout!(
        zt_open_options {
            struct_size,
            io_mode,
            max_decoded_bytes,
            allow_foreign,
            cache_bytes,
            http_headers,
            http_timeout_ms,
            http_retries,
            http_connections
        },
        zt_source {
            struct_size,
            flags,
            ctx,
            read_at,
            size,
            close,
            name
        },
        zt_writer_options {
            struct_size,
            zstd_level,
            threads,
            digest,
            frame_size,
            auto_min_ratio,
            file_version,
            alignment,
            canonical,
            shard_bytes
        },
        zt_decode_request {
            struct_size,
            status,
            object,
            role,
            dst,
            capacity,
            written
        },
        zt_dense_item {
            struct_size,
            ndim,
            name,
            dtype,
            shape,
            data,
            nbytes
        },
        zt_dense_info {
            struct_size,
            zero_copy,
            elements,
            values,
            dtype,
            r#type,
            data,
            nbytes
        },
        zt_csr_info {
            struct_size,
            zero_copy,
            rows,
            cols,
            nnz,
            values,
            values_dtype,
            values_type,
            indices,
            indices_dtype,
            indptr,
            indptr_dtype
        },
        zt_coo_info {
            struct_size,
            zero_copy,
            ndim,
            shape,
            nnz,
            values,
            values_dtype,
            values_type,
            coords,
            coords_dtype
        },
        zt_quant_info {
            struct_size,
            bits,
            group_size,
            n,
            k,
            groups,
            values_per_word,
            bitstream,
            zeros_packed,
            zero_copy,
            packed_weight,
            packed_weight_count,
            packed_weight_dtype,
            scales,
            scales_count,
            scales_dtype,
            zeros,
            zeros_count,
            zeros_dtype,
            zeros_type
        },
    );
    let c = c.replace("r#type", "type");
    let rust = rust.replace("r#type", "type");
    let dir = std::env::temp_dir().join(format!("ztensor-sys-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("layout.c"), c).unwrap();
    let include = Path::new(env!("ZTENSOR_HEADER")).parent().unwrap().to_path_buf();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(&cc)
        .arg("-I")
        .arg(&include)
        .arg(dir.join("layout.c"))
        .arg("-o")
        .arg(dir.join("layout"))
        .status()
        .unwrap_or_else(|e| panic!("{cc}: {e}"));
    assert!(built.success(), "{cc} could not build the layout program");
    let out = Command::new(dir.join("layout")).output().unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        rust,
        "C layout (left) differs from Rust's"
    );
}
