//! Finds the installed libztensor: ZTENSOR_LIB_DIR if set, else the
//! `pkg-config` program (`pkg-config --libs-only-L zt`; PKG_CONFIG_PATH
//! points it at a non-system prefix), else the linker's default paths.
//! The header (for tests/abi.rs) is ZTENSOR_HEADER, else the package's
//! includedir, else the source tree's include/ztensor.h.
use std::env;
use std::path::PathBuf;
use std::process::Command;

fn pkg_config(args: &[&str]) -> Option<String> {
    let out = Command::new(env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into()))
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    for var in [
        "ZTENSOR_LIB_DIR",
        "ZTENSOR_HEADER",
        "PKG_CONFIG_PATH",
        "PKG_CONFIG",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let lib_dir = env::var("ZTENSOR_LIB_DIR")
        .ok()
        .or_else(|| pkg_config(&["--variable=libdir", "zt"]));
    if let Some(dir) = &lib_dir {
        println!("cargo:rustc-link-search=native={dir}");
        println!("cargo:rustc-env=ZTENSOR_LIB_DIR={dir}");
        println!("cargo:lib_dir={dir}");
    } else {
        println!("cargo:rustc-env=ZTENSOR_LIB_DIR=");
    }
    println!("cargo:rustc-link-lib=dylib=ztensor");
    let header = env::var("ZTENSOR_HEADER")
        .ok()
        .map(PathBuf::from)
        .or_else(|| pkg_config(&["--variable=includedir", "zt"]).map(|d| PathBuf::from(d).join("ztensor.h")))
        .filter(|p| p.exists())
        .unwrap_or_else(|| {
            PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../../include/ztensor.h")
        });
    println!("cargo:rustc-env=ZTENSOR_HEADER={}", header.display());
}
