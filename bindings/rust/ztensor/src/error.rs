//! The one error type: a `zt_status` and the library's message.
use std::ffi::CStr;
use std::fmt;

use ztensor_sys as sys;

/// What failed, as the C ABI's `zt_status` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Status {
    Io,
    Format,
    Invalid,
    Unsupported,
    Digest,
    Limit,
    NotFound,
    Argument,
    State,
    NoMemory,
    /// A status this crate does not know (a newer library).
    Other(i32),
}

impl Status {
    pub(crate) fn from_raw(s: sys::zt_status) -> Status {
        match s {
            sys::ZT_ERR_IO => Status::Io,
            sys::ZT_ERR_FORMAT => Status::Format,
            sys::ZT_ERR_INVALID => Status::Invalid,
            sys::ZT_ERR_UNSUPPORTED => Status::Unsupported,
            sys::ZT_ERR_DIGEST => Status::Digest,
            sys::ZT_ERR_LIMIT => Status::Limit,
            sys::ZT_ERR_NOT_FOUND => Status::NotFound,
            sys::ZT_ERR_ARGUMENT => Status::Argument,
            sys::ZT_ERR_STATE => Status::State,
            sys::ZT_ERR_NOMEM => Status::NoMemory,
            other => Status::Other(other),
        }
    }

    /// The raw `zt_status` value.
    pub fn raw(self) -> i32 {
        match self {
            Status::Io => sys::ZT_ERR_IO,
            Status::Format => sys::ZT_ERR_FORMAT,
            Status::Invalid => sys::ZT_ERR_INVALID,
            Status::Unsupported => sys::ZT_ERR_UNSUPPORTED,
            Status::Digest => sys::ZT_ERR_DIGEST,
            Status::Limit => sys::ZT_ERR_LIMIT,
            Status::NotFound => sys::ZT_ERR_NOT_FOUND,
            Status::Argument => sys::ZT_ERR_ARGUMENT,
            Status::State => sys::ZT_ERR_STATE,
            Status::NoMemory => sys::ZT_ERR_NOMEM,
            Status::Other(s) => s,
        }
    }

    /// "ZT_ERR_IO", ... (zt_status_name).
    pub fn name(self) -> &'static str {
        // SAFETY: zt_status_name returns a static string for any value.
        unsafe { CStr::from_ptr(sys::zt_status_name(self.raw())) }
            .to_str()
            .unwrap_or("ZT_ERR_UNKNOWN")
    }
}

/// A failed call: its status and the library's message, which names the
/// object, component, rule and numbers involved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub status: Status,
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status.name(), self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// Turns a status into a Result, reading the thread-local message at once
/// (the call and this read happen on the same thread).
pub(crate) fn check(s: sys::zt_status) -> Result<()> {
    if s == sys::ZT_OK {
        return Ok(());
    }
    // SAFETY: zt_last_error returns a valid NUL-terminated thread-local string.
    let message = unsafe { CStr::from_ptr(sys::zt_last_error()) }
        .to_string_lossy()
        .into_owned();
    Err(Error {
        status: Status::from_raw(s),
        message,
    })
}

pub(crate) fn argument(message: impl Into<String>) -> Error {
    Error {
        status: Status::Argument,
        message: message.into(),
    }
}
