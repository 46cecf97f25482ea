"""
    ZTensor

Reads and writes zTensor (`.zt`) files through libztensor's C ABI
(`include/ztensor.h`, `libztensor.so.1`), with `ccall` and nothing else.

    r = ZTensor.open("model.zt")
    keys(r)                      # object names, in the file's order
    A = read(r, "layer.weight")  # a dense object as a Julia Array (a copy)
    B = read_f32(r, "adj")       # any object (sparse, quantized, bf16...) as Float32
    close(r)

Layout: zTensor arrays are row-major (C order), Julia's column-major. An
object of shape `[d1, ..., dk]` comes back as a `d1 × ... × dk` Array with
`A[i1, ..., ik]` the file's element `[i1-1, ..., ik-1]`; `write_dense!`
stores a Julia array the same way, so `size(A)` is the object's shape in
both directions (the data is transposed on the way, which costs one copy).

The library is loaded when the package is (`__init__`): the file named by
`ENV["ZTENSOR_LIBRARY"]` if set, otherwise `libztensor.so.1` through the
system's dynamic loader.
"""
module ZTensor

using Libdl

export Reader, Writer, ZtError,
       format, shape, dtype, component_type, components,
       read_f32, read_f64, component_bytes, verify, manifest_json, file_version, file_format,
       write_dense!, add_csr!, begin_object!, add_component!, end_object!, cancel_object!,
       set_attributes_json!, set_object_attributes_json!, finish!, abort!

# `open` and `open_url` are this module's own functions, not methods of
# `Base.open` (whose `open(path::AbstractString; kwargs...)` they would
# overwrite), and are not exported, so that `using ZTensor` does not hide
# `Base.open`: call them `ZTensor.open(path)`. Declared first, before anything
# in this module could refer to `open` and bind it to `Base.open`.
function open end
function open_url end

# zt_status (ztensor.h). Not exported: `ZTensor.ZT_ERR_NOT_FOUND`.
const ZT_OK = Cint(0)
const ZT_ERR_IO = Cint(1)
const ZT_ERR_FORMAT = Cint(2)
const ZT_ERR_INVALID = Cint(3)
const ZT_ERR_UNSUPPORTED = Cint(4)
const ZT_ERR_DIGEST = Cint(5)
const ZT_ERR_LIMIT = Cint(6)
const ZT_ERR_NOT_FOUND = Cint(7)
const ZT_ERR_ARGUMENT = Cint(8)
const ZT_ERR_STATE = Cint(9)
const ZT_ERR_NOMEM = Cint(10)

# zt_io_mode
const ZT_IO_MAP = UInt32(0)
const ZT_IO_COPY = UInt32(1)

# ---------------------------------------------------------------------------
# The library
#
# `ccall((:zt_open, lib), ...)` wants `lib` to be a constant when the calling
# method is compiled: a `const lib = get(ENV, ...)` would be evaluated once,
# at precompile time, freezing the ZTENSOR_LIBRARY of whichever session
# precompiled the package, and a library computed at run time inside the
# tuple (`(:zt_open, LIB[])`) is not accepted by the Julia versions this
# package supports (1.6 on). So the library is opened at load time, in
# `__init__`, with `Libdl.dlopen`;
# each function's address is looked up there once with `Libdl.dlsym` and
# kept in a `const` `Ref{Ptr{Cvoid}}` named `_fp_<function>`; every call is
# `ccall(_fp_<function>[], ReturnType, (ArgTypes...,), args...)`. ccall takes
# a function pointer computed at run time (the manual's "Indirect Calls");
# the return and argument types stay literal, so the calls are fully typed.
# The Refs hold C_NULL in the precompiled image and are filled by __init__
# in every session, before any call can run.

const _FUNCTIONS = (
    :zt_status_name, :zt_last_error, :zt_version, :zt_version_number, :zt_url_for_messages,
    :zt_open_options_init_sized, :zt_open_ex, :zt_open_url, :zt_close,
    :zt_file_version, :zt_file_format, :zt_manifest_json,
    :zt_object_count, :zt_object_name, :zt_object_find, :zt_object_format, :zt_object_shape,
    :zt_object_element_count, :zt_object_value_count, :zt_object_decode_capacity,
    :zt_component_count, :zt_component_role, :zt_component_dtype, :zt_component_type,
    :zt_component_decoded_size, :zt_component_map, :zt_component_read,
    :zt_object_decode_f32, :zt_object_decode_f64, :zt_verify,
    :zt_writer_open, :zt_writer_add_dense, :zt_writer_begin_object, :zt_writer_add_component,
    :zt_writer_end_object, :zt_writer_cancel_object,
    :zt_writer_set_file_attributes_json, :zt_writer_set_object_attributes_json,
    :zt_writer_finish, :zt_writer_abort,
)

for f in _FUNCTIONS
    @eval const $(Symbol(:_fp_, f)) = Ref{Ptr{Cvoid}}(C_NULL)
end

const _library = Ref{String}("")

"""
    ZTensor.library() -> String

The library this session loaded: `ENV["ZTENSOR_LIBRARY"]` when the package
was loaded, else `"libztensor.so.1"` (found by the system's dynamic loader).
"""
library() = _library[]

function __init__()
    name = get(ENV, "ZTENSOR_LIBRARY", "libztensor.so.1")
    handle = try
        Libdl.dlopen(name)
    catch e
        error("ZTensor: cannot load libztensor from $(repr(name)): $(sprint(showerror, e)). ",
              "Install the library (cmake --install) where the system's loader finds it ",
              "(ldconfig, LD_LIBRARY_PATH), or set ENV[\"ZTENSOR_LIBRARY\"] to the path of ",
              "libztensor.so.1 before loading ZTensor.")
    end
    for f in _FUNCTIONS
        address = try
            Libdl.dlsym(handle, f)
        catch
            error("ZTensor: $(repr(name)) has no function $f: it is older than this package ",
                  "(ZTensor 1.0 needs libztensor 1.0 or newer of major version 1)")
        end
        getfield(@__MODULE__, Symbol(:_fp_, f))[] = address
    end
    _library[] = name
    major = ccall(_fp_zt_version_number[], Cuint, ()) ÷ 10000
    major == 1 || error("ZTensor: $(repr(name)) is libztensor $(version()); this package ",
                        "speaks the ABI of major version 1 (libztensor.so.1)")
    return nothing
end

"""
    ZTensor.version() -> VersionNumber

The version of the loaded libztensor (`zt_version`).
"""
version() = VersionNumber(unsafe_string(ccall(_fp_zt_version[], Ptr{UInt8}, ())))

# ---------------------------------------------------------------------------
# Errors

"""
    ZtError(status, name, message) <: Exception

A failed libztensor call: `status` is the `zt_status` (`ZTensor.ZT_ERR_IO`,
`ZTensor.ZT_ERR_NOT_FOUND`, ...), `name` its name (`"ZT_ERR_NOT_FOUND"`) and
`message` the library's explanation, which names the object, component,
rule and numbers involved (`no object "w"`).

The package raises it too for a call on a closed `Reader` or a finished
`Writer` (`ZT_ERR_STATE`) and for what the file holds but Julia cannot
represent (`ZT_ERR_UNSUPPORTED`: a bf16 object for `read`, use `read_f32`).
Mistakes in the arguments that Julia sees first (a NUL inside a name, a
negative dimension, an element type without a zTensor dtype) are
`ArgumentError`s.
"""
struct ZtError <: Exception
    status::Cint
    name::String
    message::String
end

ZtError(status::Integer, message::AbstractString) =
    ZtError(Cint(status), status_name(status), String(message))

"""
    ZTensor.status_name(status) -> String

The name of a `zt_status` (`"ZT_ERR_INVALID"`), `"ZT_ERR_UNKNOWN"` for others.
"""
status_name(status::Integer) =
    unsafe_string(ccall(_fp_zt_status_name[], Ptr{UInt8}, (Cint,), status))

Base.showerror(io::IO, e::ZtError) = print(io, "ZtError: ", e.name, ": ", e.message)

# zt_last_error() is per OS thread and only good until the next failing call
# on that thread, so it is copied right after the call that failed: `_check`
# runs on the task that made the call, with no yield point in between (a task
# moves to another thread only where it yields). Finalizers, which may run at
# any allocation, call only zt_close and zt_writer_abort, which never set it.
@inline function _check(status::Cint)
    status == ZT_OK || _throw_last(status)
    return nothing
end

@noinline function _throw_last(status::Cint)
    message = unsafe_string(ccall(_fp_zt_last_error[], Ptr{UInt8}, ()))
    throw(ZtError(status, message))
end

_text(p::Ptr{UInt8}) = p == C_NULL ? nothing : unsafe_string(p)

function _int(x::UInt64, what::AbstractString)
    x <= typemax(Int) || throw(ZtError(ZT_ERR_LIMIT, "$what, $x, does not fit in an Int"))
    return Int(x)
end

function _uint(::Type{T}, x::Integer, what::AbstractString) where {T<:Unsigned}
    0 <= x <= typemax(T) || throw(ArgumentError("$what must be in 0:$(typemax(T)), got $x"))
    return T(x)
end

# ---------------------------------------------------------------------------
# Row-major (zTensor) <-> column-major (Julia)

# The elements of a row-major array of shape `dims`, as the Julia array of
# size `dims` with the same elements at the same indices.
function _from_rowmajor(v::Vector, dims::Vector{Int})
    N = length(dims)
    N == 1 && return v
    N == 0 && return reshape(v, ())   # a scalar: a 0-dimensional Array
    # v in memory order is the column-major array of the reversed shape;
    # reversing the axes puts every element at its own index.
    return permutedims(reshape(v, Tuple(reverse(dims))), Tuple(N:-1:1))
end

# A contiguous Array whose memory holds A's elements in row-major order of
# size(A). An Array of rank 0 or 1 is passed through as it is (no copy).
function _rowmajor(A::AbstractArray{T,N}) where {T,N}
    N <= 1 && return convert(Array{T,N}, A)
    return convert(Array{T,N}, permutedims(A, ntuple(d -> N + 1 - d, Val(N))))
end

# Storage dtype and logical type of a Julia element type.
_zt_dtype(::Type{Float64}) = ("f64", nothing)
_zt_dtype(::Type{Float32}) = ("f32", nothing)
_zt_dtype(::Type{Float16}) = ("f16", nothing)
_zt_dtype(::Type{Int64}) = ("i64", nothing)
_zt_dtype(::Type{Int32}) = ("i32", nothing)
_zt_dtype(::Type{Int16}) = ("i16", nothing)
_zt_dtype(::Type{Int8}) = ("i8", nothing)
_zt_dtype(::Type{UInt64}) = ("u64", nothing)
_zt_dtype(::Type{UInt32}) = ("u32", nothing)
_zt_dtype(::Type{UInt16}) = ("u16", nothing)
_zt_dtype(::Type{UInt8}) = ("u8", nothing)
_zt_dtype(::Type{Bool}) = ("bool", nothing)
_zt_dtype(::Type{ComplexF32}) = ("f32", "complex64")
_zt_dtype(::Type{ComplexF64}) = ("f64", "complex128")
_zt_dtype(::Type{T}) where {T} = throw(ArgumentError(
    "element type $T has no zTensor dtype: pass dtype= (and type=) to store its bits"))

const _WIDTH = Dict("f64" => 8, "f32" => 4, "f16" => 2, "bf16" => 2, "i64" => 8, "i32" => 4,
                    "i16" => 2, "i8" => 1, "u64" => 8, "u32" => 4, "u16" => 2, "u8" => 1,
                    "bool" => 1)

# (dtype, type) for elements of type T, with the caller's overrides: dtype
# stores bits under another name (UInt16 data as "bf16"), type adds a
# logical type (UInt8 data as "f8_e4m3fn").
function _dtype_and_type(::Type{T}, dtype, type) where {T}
    isbitstype(T) || throw(ArgumentError("element type $T is not a plain bits type"))
    if dtype === nothing
        dt, implied = _zt_dtype(T)
    else
        dt, implied = String(dtype), nothing
        width = get(_WIDTH, dt, nothing)
        if width !== nothing && width != sizeof(T) && !(type !== nothing && startswith(type, "complex"))
            throw(ArgumentError("dtype $dt needs $width-byte elements, the array has $(sizeof(T))-byte $T"))
        end
    end
    return dt, type === nothing ? implied : String(type)
end

# A shape given in zTensor order, as the library takes it.
function _shape_arg(shape)
    dims = UInt64[]
    for d in shape
        d isa Integer && d >= 0 || throw(ArgumentError("a shape holds non-negative integers, got $(repr(d))"))
        push!(dims, UInt64(d))
    end
    return dims
end

# Julia element type of a stored (dtype, type), or nothing.
function _julia_eltype(dt::String, ty::Union{Nothing,String})
    if ty === nothing
        dt == "f64" && return Float64
        dt == "f32" && return Float32
        dt == "f16" && return Float16
        dt == "i64" && return Int64
        dt == "i32" && return Int32
        dt == "i16" && return Int16
        dt == "i8" && return Int8
        dt == "u64" && return UInt64
        dt == "u32" && return UInt32
        dt == "u16" && return UInt16
        dt == "u8" && return UInt8
        dt == "bool" && return Bool
    elseif ty == "bool" && dt == "u8"          # v2's bool
        return Bool
    elseif ty == "complex64" && dt == "f32"
        return ComplexF32
    elseif ty == "complex128" && dt == "f64"
        return ComplexF64
    end
    return nothing                             # bf16, FP8, f4_e2m1, unknown types
end

# ---------------------------------------------------------------------------
# zt_open_options, field for field (ztensor.h). Julia lays out an isbits
# struct by the C rules of the platform, padding included: on LP64 systems
# 4 bytes after allow_foreign (so that cache_bytes sits at 24) and 4 at the
# end (size 56). Checked below, at precompile time.

struct OpenOptions
    struct_size::UInt32
    io_mode::UInt32
    max_decoded_bytes::UInt64
    allow_foreign::UInt32
    cache_bytes::UInt64
    http_headers::Ptr{UInt8}
    http_timeout_ms::UInt32
    http_retries::UInt32
    http_connections::UInt32
end

if Sys.WORD_SIZE == 64
    @assert sizeof(OpenOptions) == 56
    @assert fieldoffset(OpenOptions, 3) == 8    # max_decoded_bytes
    @assert fieldoffset(OpenOptions, 4) == 16   # allow_foreign
    @assert fieldoffset(OpenOptions, 5) == 24   # cache_bytes
    @assert fieldoffset(OpenOptions, 6) == 32   # http_headers
    @assert fieldoffset(OpenOptions, 9) == 48   # http_connections
end

# The library's defaults (zt_open_options_init_sized), then the caller's
# values. The library records in struct_size how much of the struct it
# knows (an older library: fewer fields) and reads no further.
function _open_options(; io_copy::Bool=false, allow_foreign::Bool=false,
                       max_decoded_bytes::Integer=0, cache_bytes::Integer=0,
                       headers::Ptr{UInt8}=Ptr{UInt8}(C_NULL), timeout_ms::Integer=0,
                       retries::Union{Nothing,Integer}=nothing, connections::Integer=0)
    ref = Ref(OpenOptions(0, 0, 0, 0, 0, C_NULL, 0, 0, 0))
    ccall(_fp_zt_open_options_init_sized[], Cvoid, (Ref{OpenOptions}, Csize_t),
          ref, sizeof(OpenOptions))
    d = ref[]
    return Ref(OpenOptions(d.struct_size,
                           io_copy ? ZT_IO_COPY : d.io_mode,
                           _uint(UInt64, max_decoded_bytes, "max_decoded_bytes"),
                           allow_foreign ? UInt32(1) : d.allow_foreign,
                           _uint(UInt64, cache_bytes, "cache_bytes"),
                           headers,
                           _uint(UInt32, timeout_ms, "timeout_ms"),
                           retries === nothing ? d.http_retries : _uint(UInt32, retries, "retries"),
                           _uint(UInt32, connections, "connections")))
end

# ---------------------------------------------------------------------------
# Reader

"""
    Reader

An open zTensor file (a `zt_reader`), from [`ZTensor.open`](@ref) or
[`ZTensor.open_url`](@ref). Dict-like: `keys(r)`, `length(r)`,
`haskey(r, name)`, `r[name]` (= `read(r, name)`).

- Everything it returns is a copy (arrays, strings): nothing refers to the
  file's memory, so results stay valid after `close(r)`.
- `close(r)` frees the reader; a reader that is only dropped is freed by the
  garbage collector. `close` is idempotent; any other call on a closed
  reader throws `ZtError` with status `ZT_ERR_STATE`.
- A Reader may be used from several tasks and threads at once. A `close`
  while other calls are running waits for none of them and breaks none: the
  reader is freed when the last of them returns, and calls made after the
  `close` throw.
"""
mutable struct Reader
    ptr::Ptr{Cvoid}
    path::String
    # 4 x (calls in flight) + 2 x (freed) + (closed): see _acquire.
    state::Threads.Atomic{Int}
    function Reader(ptr::Ptr{Cvoid}, path::String)
        r = new(ptr, path, Threads.Atomic{Int}(0))
        return finalizer(close, r)
    end
end

"""
    Reader(path; copy=false, allow_foreign=false, max_decoded_bytes=0)

The same as [`ZTensor.open`](@ref).
"""
Reader(path::AbstractString; kwargs...) = open(path; kwargs...)

"""
    ZTensor.open(path; copy=false, allow_foreign=false, max_decoded_bytes=0) -> Reader
    ZTensor.open(f, path; kwargs...)

Opens a zTensor file (`zt_open_ex`): the container and the whole manifest
are checked, no data byte is read. With a function `f` (a `do` block), calls
`f(reader)` and closes the reader when `f` returns or throws.

- `copy=true`: read with `pread` into owned buffers (`ZT_IO_COPY`) instead of
  a memory mapping, for files that may change while open: a file truncated
  by someone else then gives `ZT_ERR_IO` instead of a SIGBUS.
- `allow_foreign=true`: a `.safetensors`, `.gguf`, `.npy`, `.npz`, PyTorch
  (`.pt`, `.pth`, `.bin`, `.ckpt`) or sharded `.index.json` file is read by
  that format's reader, through the same calls.
- `max_decoded_bytes`: cap on one component's decoded size (`ZT_ERR_LIMIT`
  above it); 0 is the library's build default (64 GiB).

Throws `ZtError` (`ZT_ERR_IO` for a missing file, `ZT_ERR_FORMAT`, ...).
"""
function open(path::AbstractString; copy::Bool=false, allow_foreign::Bool=false,
              max_decoded_bytes::Integer=0)
    opt = _open_options(io_copy=copy, allow_foreign=allow_foreign,
                        max_decoded_bytes=max_decoded_bytes)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    _check(ccall(_fp_zt_open_ex[], Cint, (Cstring, Ref{OpenOptions}, Ref{Ptr{Cvoid}}),
                 path, opt, out))
    return Reader(out[], String(path))
end

function open(f::Function, path::AbstractString; kwargs...)
    r = open(path; kwargs...)
    try
        return f(r)
    finally
        close(r)
    end
end

"""
    ZTensor.open_url(url; headers=String[], timeout_ms=30000, retries=3, connections=4,
                     cache_bytes=0, max_decoded_bytes=0) -> Reader

Opens the zTensor file at an `http://` or `https://` URL (`zt_open_url`,
docs/remote.md): two range requests to open, then only the byte ranges that
each call needs. `headers` are sent with every request: strings
`"Name: value"` or pairs `"Name" => "value"` (a `Dict` works too); the
environment variable `ZT_HTTP_BEARER_TOKEN` adds an Authorization header
unless one is given. `timeout_ms` is the connect timeout and the longest a
transfer may stall; `retries` the retries after a 5xx answer or a
connection error; `connections` the connections used for calls running at
once; `cache_bytes` the fetched ranges kept for reuse (0: 64 MiB).
"""
function open_url(url::AbstractString; headers=String[], timeout_ms::Integer=30000,
                  retries::Integer=3, connections::Integer=4, cache_bytes::Integer=0,
                  max_decoded_bytes::Integer=0)
    headers isa Union{AbstractString,Pair} && (headers = (headers,))   # one header alone
    lines = String[h isa Pair ? string(h.first, ": ", h.second) : String(h) for h in headers]
    # Neither the URL nor a header is echoed: user info, query strings and
    # "Authorization: ..." lines are where credentials travel.
    occursin('\0', url) && throw(ArgumentError("the URL contains a NUL byte (its text is not shown)"))
    for h in lines
        (occursin('\n', h) || occursin('\r', h)) &&
            throw(ArgumentError("an HTTP header may not contain a line break (its text is not shown)"))
        occursin('\0', h) && throw(ArgumentError("an HTTP header may not contain NUL (its text is not shown)"))
    end
    text = join(lines, '\n')   # the C field: "Name: value" lines separated by '\n'
    out = Ref{Ptr{Cvoid}}(C_NULL)
    GC.@preserve text begin    # the library copies the headers during the call
        opt = _open_options(max_decoded_bytes=max_decoded_bytes, cache_bytes=cache_bytes,
                            headers=isempty(lines) ? Ptr{UInt8}(C_NULL) : pointer(text),
                            timeout_ms=timeout_ms, retries=retries, connections=connections)
        _check(ccall(_fp_zt_open_url[], Cint, (Cstring, Ref{OpenOptions}, Ref{Ptr{Cvoid}}),
                     url, opt, out))
    end
    return Reader(out[], _url_for_messages(url))
end

# The URL without user info, query or fragment (which may hold credentials),
# as the library's own messages name it: the library's rule itself
# (zt_url_for_messages), so that a password holding '/', '?' or '#' is cut
# where the library cuts it.
function _url_for_messages(url::AbstractString)
    u = String(url)
    occursin('\0', u) && return "(a URL with a NUL byte)"
    n = ccall(_fp_zt_url_for_messages[], Csize_t, (Cstring, Ptr{UInt8}, Csize_t),
              u, Ptr{UInt8}(C_NULL), 0)
    buf = Vector{UInt8}(undef, n + 1)
    ccall(_fp_zt_url_for_messages[], Csize_t, (Cstring, Ptr{UInt8}, Csize_t), u, buf, length(buf))
    return String(buf[1:n])
end

# A call holds the reader for its duration, so that neither `close` nor the
# garbage collector frees it under the call: `_using(f, r)` runs `f(ptr)`
# between _acquire and _release, and the reference to `r` it keeps roots `r`
# until then. state = 4 x (calls in flight) + 2 x (freed) + (closed). Whoever
# sees "closed, no call in flight, not freed" (state 1) and turns it into 3
# by compare-and-swap frees the reader: `close` if no call is in flight,
# otherwise the call that ends last. The freed bit keeps any later
# transient count from looking like state 1 again, so it is freed once.
function _acquire(r::Reader)
    old = Threads.atomic_add!(r.state, 4)
    if old & 1 != 0
        _release(r)
        throw(ZtError(ZT_ERR_STATE, "the reader of $(repr(r.path)) is closed"))
    end
    return r.ptr
end

function _release(r::Reader)
    Threads.atomic_sub!(r.state, 4) == 5 && _free(r)
    return nothing
end

function _free(r::Reader)
    if Threads.atomic_cas!(r.state, 1, 3) == 1
        p = r.ptr
        r.ptr = C_NULL
        ccall(_fp_zt_close[], Cvoid, (Ptr{Cvoid},), p)
    end
    return nothing
end

function _using(f, r::Reader)
    p = _acquire(r)
    try
        return f(p)
    finally
        _release(r)
    end
end

"""
    close(r::Reader)

Closes the reader (`zt_close`). Idempotent. Calls still running on other
tasks finish first (the reader is freed when the last returns); later calls
throw `ZtError` (`ZT_ERR_STATE`). Also the reader's finalizer.
"""
function Base.close(r::Reader)
    Threads.atomic_or!(r.state, 1)
    _free(r)
    return nothing
end

Base.isopen(r::Reader) = r.state[] & 1 == 0

Base.show(io::IO, r::Reader) =
    print(io, "ZTensor.Reader(", repr(r.path), isopen(r) ? "" : ", closed", ")")

function _find(p::Ptr{Cvoid}, name::AbstractString)
    index = Ref{Csize_t}(0)
    _check(ccall(_fp_zt_object_find[], Cint, (Ptr{Cvoid}, Cstring, Ref{Csize_t}), p, name, index))
    return index[]
end

_format(p::Ptr{Cvoid}, i) =
    unsafe_string(ccall(_fp_zt_object_format[], Ptr{UInt8}, (Ptr{Cvoid}, Csize_t), p, i))

function _shape(p::Ptr{Cvoid}, i)
    ndim = Ref{Csize_t}(0)
    dims = ccall(_fp_zt_object_shape[], Ptr{UInt64}, (Ptr{Cvoid}, Csize_t, Ref{Csize_t}), p, i, ndim)
    return Int[_int(unsafe_load(dims, k), "a dimension") for k in 1:Int(ndim[])]
end

function _element_count(p::Ptr{Cvoid}, i)
    count = Ref{UInt64}(0)
    _check(ccall(_fp_zt_object_element_count[], Cint, (Ptr{Cvoid}, Csize_t, Ref{UInt64}),
                 p, i, count))
    return _int(count[], "the element count")
end

# A component's storage dtype; ZtError if the object has no such component.
function _dtype(p::Ptr{Cvoid}, i, name::AbstractString, role::AbstractString)
    dt = _text(ccall(_fp_zt_component_dtype[], Ptr{UInt8}, (Ptr{Cvoid}, Csize_t, Cstring),
                     p, i, role))
    dt === nothing &&
        throw(ZtError(ZT_ERR_NOT_FOUND, "object $(repr(name)) has no component $(repr(role))"))
    return dt
end

_type(p::Ptr{Cvoid}, i, role::AbstractString) =
    _text(ccall(_fp_zt_component_type[], Ptr{UInt8}, (Ptr{Cvoid}, Csize_t, Cstring), p, i, role))

"""
    keys(r::Reader) -> Vector{String}

The names of the file's objects, in the file's (manifest) order.
"""
function Base.keys(r::Reader)
    _using(r) do p
        n = Int(ccall(_fp_zt_object_count[], Csize_t, (Ptr{Cvoid},), p))
        String[unsafe_string(ccall(_fp_zt_object_name[], Ptr{UInt8}, (Ptr{Cvoid}, Csize_t), p, k))
               for k in 0:(n - 1)]
    end
end

Base.length(r::Reader) =
    _using(p -> Int(ccall(_fp_zt_object_count[], Csize_t, (Ptr{Cvoid},), p)), r)

function Base.haskey(r::Reader, name::AbstractString)
    _using(r) do p
        index = Ref{Csize_t}(0)
        ccall(_fp_zt_object_find[], Cint, (Ptr{Cvoid}, Cstring, Ref{Csize_t}), p, name, index) == ZT_OK
    end
end

Base.getindex(r::Reader, name::AbstractString) = read(r, name)

"""
    format(r::Reader, name) -> String

The object's format: `"dense"`, `"sparse_csr"`, `"sparse_coo"`,
`"quantized_group"`, or as the file names it. `ZtError` (`ZT_ERR_NOT_FOUND`)
for an unknown name, as for every call that takes one.
"""
function format(r::Reader, name::AbstractString)
    _using(r) do p
        _format(p, _find(p, name))
    end
end

"""
    shape(r::Reader, name) -> Vector{Int}

The object's shape as the file states it (zTensor, row-major order): `[2, 3]`
for a matrix of 2 rows and 3 columns, which `read` returns as a 2×3 Matrix.
Empty for a scalar.
"""
function shape(r::Reader, name::AbstractString)
    _using(r) do p
        _shape(p, _find(p, name))
    end
end

"""
    dtype(r::Reader, name, role="data") -> String

The storage dtype of one component (`"f32"`, `"bf16"`, `"u64"`, ...). Dense
objects keep their elements in `"data"`; sparse ones in `"values"`,
`"indices"`, `"indptr"` (CSR) or `"values"`, `"coords"` (COO).
"""
function dtype(r::Reader, name::AbstractString, role::AbstractString="data")
    _using(r) do p
        _dtype(p, _find(p, name), name, role)
    end
end

"""
    component_type(r::Reader, name, role="data") -> Union{String,Nothing}

The component's logical type (`"complex64"`, `"f8_e4m3fn"`, ...), or
`nothing` when its elements are plain values of its dtype.
"""
function component_type(r::Reader, name::AbstractString, role::AbstractString="data")
    _using(r) do p
        i = _find(p, name)
        _dtype(p, i, name, role)     # ZtError for a missing role
        _type(p, i, role)
    end
end

"""
    components(r::Reader, name) -> Vector{String}

The roles of the object's components (`["data"]` for a dense object).
"""
function components(r::Reader, name::AbstractString)
    _using(r) do p
        i = _find(p, name)
        n = Int(ccall(_fp_zt_component_count[], Csize_t, (Ptr{Cvoid}, Csize_t), p, i))
        String[unsafe_string(ccall(_fp_zt_component_role[], Ptr{UInt8},
                                   (Ptr{Cvoid}, Csize_t, Csize_t), p, i, k))
               for k in 0:(n - 1)]
    end
end

"""
    read(r::Reader, name) -> Array

A dense object as a new Julia `Array` of its own element type: Float64,
Float32, Float16, Int8 ... Int64, UInt8 ... UInt64, Bool, ComplexF32 and
ComplexF64 (stored as complex64 / complex128). The array's size is the
object's shape: an object of shape `[m, n]` comes back as an `m×n` Matrix
holding the same element at the same index (the row-major data is
reshaped to `(n, m)` and transposed with `permutedims`); a scalar as a
0-dimensional Array.

`ZtError` with `ZT_ERR_ARGUMENT` for an object that is not dense, and with
`ZT_ERR_UNSUPPORTED` for a type Julia has no element type for (bf16, FP8):
[`read_f32`](@ref) converts those, and decodes sparse and quantized objects.
"""
function Base.read(r::Reader, name::AbstractString)
    _using(r) do p
        i = _find(p, name)
        fmt = _format(p, i)
        fmt == "dense" || throw(ZtError(ZT_ERR_ARGUMENT,
            "object $(repr(name)) is $fmt, not dense: read_f32 decodes it to a dense array, " *
            "component_bytes reads its components"))
        dt = _dtype(p, i, name, "data")
        ty = _type(p, i, "data")
        T = _julia_eltype(dt, ty)
        T === nothing && throw(ZtError(ZT_ERR_UNSUPPORTED,
            "object $(repr(name)): $(ty === nothing ? dt : "$dt of type $ty") has no Julia " *
            "element type here; read_f32 converts it"))
        _read_dense(p, i, T, name)
    end
end

function _read_dense(p::Ptr{Cvoid}, i, ::Type{T}, name::AbstractString) where {T}
    dims = _shape(p, i)
    n = _element_count(p, i)
    # Bool is read as bytes first: a Julia Bool must be 0x00 or 0x01.
    S = T === Bool ? UInt8 : T
    buf = Vector{S}(undef, n)
    if n > 0
        written = Ref{UInt64}(0)
        _check(ccall(_fp_zt_component_read[], Cint,
                     (Ptr{Cvoid}, Csize_t, Cstring, Ptr{Cvoid}, UInt64, Ref{UInt64}),
                     p, i, "data", buf, sizeof(buf), written))
        written[] == sizeof(buf) || throw(ZtError(ZT_ERR_INVALID,
            "object $(repr(name)): \"data\" holds $(written[]) bytes, its shape needs $(sizeof(buf))"))
    end
    values = T === Bool ? Bool[b != 0x00 for b in buf] : buf
    return _from_rowmajor(values, dims)
end

"""
    read_f32(r::Reader, name) -> Array{Float32} (or Array{ComplexF32})

Any object the library can decode as a new dense Float32 array of the
object's shape (`zt_object_decode_f32`): dense objects of any numeric type
(bf16, FP8, integers, bool, ...) converted, sparse CSR/COO objects with
zeros filled in, quantized_group objects dequantised. Complex objects come
back as `ComplexF32`. The same layout rule as [`read`](@ref): shape `[m, n]`
gives an `m×n` Matrix.
"""
read_f32(r::Reader, name::AbstractString) = _decode(r, name, Float32)

"""
    read_f64(r::Reader, name) -> Array{Float64} (or Array{ComplexF64})

As [`read_f32`](@ref), in Float64 (`zt_object_decode_f64`).
"""
read_f64(r::Reader, name::AbstractString) = _decode(r, name, Float64)

function _decode(r::Reader, name::AbstractString, ::Type{F}) where {F<:Union{Float32,Float64}}
    _using(r) do p
        i = _find(p, name)
        dims = _shape(p, i)
        n = _element_count(p, i)
        count = Ref{UInt64}(0)
        # Checked against max_decoded_bytes as the decode checks it: a sparse
        # shape of 2^50 values is refused before anything is allocated.
        _check(ccall(_fp_zt_object_decode_capacity[], Cint,
                     (Ptr{Cvoid}, Csize_t, Csize_t, Ref{UInt64}), p, i, sizeof(F), count))
        if count[] == n
            _decode_into(p, i, Vector{F}(undef, n), dims, name)
        elseif count[] == 2 * UInt64(n)       # complex: (real, imag) pairs
            _decode_into(p, i, Vector{Complex{F}}(undef, n), dims, name)
        else
            throw(ZtError(ZT_ERR_INVALID, "object $(repr(name)): $(count[]) values for $n elements"))
        end
    end
end

function _decode_into(p::Ptr{Cvoid}, i, out::Vector{T}, dims::Vector{Int},
                      name::AbstractString) where {T}
    F = real(T)
    values = length(out) * (T <: Complex ? 2 : 1)
    if values > 0
        fp = F === Float32 ? _fp_zt_object_decode_f32[] : _fp_zt_object_decode_f64[]
        written = Ref{UInt64}(0)
        _check(ccall(fp, Cint, (Ptr{Cvoid}, Csize_t, Ptr{Cvoid}, UInt64, Ref{UInt64}),
                     p, i, out, values, written))
        written[] == values || throw(ZtError(ZT_ERR_INVALID,
            "object $(repr(name)): decoded $(written[]) values, expected $values"))
    end
    return _from_rowmajor(out, dims)
end

"""
    component_bytes(r::Reader, name, role) -> Vector{UInt8}

The decoded bytes of one component (`zt_component_read`): little-endian
elements of its dtype, in the file's (row-major) order, as a new vector.
`reinterpret(Float64, component_bytes(r, "adj", "values"))` views them as
numbers.
"""
function component_bytes(r::Reader, name::AbstractString, role::AbstractString)
    _using(r) do p
        i = _find(p, name)
        nbytes = Ref{UInt64}(0)
        status = ccall(_fp_zt_component_decoded_size[], Cint,
                       (Ptr{Cvoid}, Csize_t, Cstring, Ref{UInt64}), p, i, role, nbytes)
        if status == ZT_OK
            buf = Vector{UInt8}(undef, _int(nbytes[], "the component's size"))
            if !isempty(buf)
                written = Ref{UInt64}(0)
                _check(ccall(_fp_zt_component_read[], Cint,
                             (Ptr{Cvoid}, Csize_t, Cstring, Ptr{Cvoid}, UInt64, Ref{UInt64}),
                             p, i, role, buf, length(buf), written))
                resize!(buf, _int(written[], "the component's size"))
            end
            buf
        elseif status == ZT_ERR_UNSUPPORTED
            # The decoded size is not known without decoding (zstd without a
            # recorded size): the library decodes it once into its cache.
            data = Ref{Ptr{Cvoid}}(C_NULL)
            _check(ccall(_fp_zt_component_map[], Cint,
                         (Ptr{Cvoid}, Csize_t, Cstring, Ref{Ptr{Cvoid}}, Ref{UInt64}),
                         p, i, role, data, nbytes))
            buf = Vector{UInt8}(undef, _int(nbytes[], "the component's size"))
            GC.@preserve buf unsafe_copyto!(pointer(buf), Ptr{UInt8}(data[]), length(buf))
            buf
        else
            _throw_last(status)
        end
    end
end

"""
    verify(r::Reader) -> (checked, unchecked)

Deep check of the whole file (`zt_verify`): decodes every component, checks
every digest and the content rules that opening leaves alone (CSR/COO
structure, bool bytes, ...). Returns how many components had their digest
verified and how many had none (or one of an unknown algorithm). `ZtError`
with `ZT_ERR_DIGEST` or `ZT_ERR_INVALID` naming the first fault.
"""
function verify(r::Reader)
    _using(r) do p
        checked, unchecked = Ref{UInt64}(0), Ref{UInt64}(0)
        _check(ccall(_fp_zt_verify[], Cint, (Ptr{Cvoid}, Ref{UInt64}, Ref{UInt64}),
                     p, checked, unchecked))
        (_int(checked[], "a count"), _int(unchecked[], "a count"))
    end
end

"""
    manifest_json(r::Reader) -> String

The whole manifest as one JSON document (`zt_manifest_json`): `{"version",
"attributes", "objects": {name: {"shape", "format", "attributes",
"components": {...}}}}`. The file's and each object's attributes are in it;
parse it with any JSON package.
"""
function manifest_json(r::Reader)
    _using(r) do p
        t = _text(ccall(_fp_zt_manifest_json[], Ptr{UInt8}, (Ptr{Cvoid},), p))
        t === nothing && throw(ZtError(ZT_ERR_NOMEM, "the manifest's JSON could not be built"))
        t
    end
end

"""
    file_version(r::Reader) -> String

The version the file states (`"1.2.0"`, `"1.0"`, `"2"`, ...; `""` for a
foreign file).
"""
file_version(r::Reader) =
    _using(p -> unsafe_string(ccall(_fp_zt_file_version[], Ptr{UInt8}, (Ptr{Cvoid},), p)), r)

"""
    file_format(r::Reader) -> String

What the reader reads: `"zt"`, or the foreign format (`"safetensors"`,
`"gguf"`, `"npy"`, `"npz"`, `"pytorch"`, `"hf_index"`).
"""
file_format(r::Reader) =
    _using(p -> unsafe_string(ccall(_fp_zt_file_format[], Ptr{UInt8}, (Ptr{Cvoid},), p)), r)

# ---------------------------------------------------------------------------
# Writer

"""
    Writer(path)

Writes a zTensor file (`zt_writer_open`). Nothing appears at `path` until
[`finish!`](@ref): the library writes a temporary file and renames it into
place. A Writer that is dropped unfinished is aborted by its finalizer, as
[`abort!`](@ref) does: no file appears.

A Writer belongs to one task at a time. Its calls hold a lock, so calls from
several tasks cannot corrupt it, but an object begun by one task takes the
components that any task adds next.
"""
mutable struct Writer
    ptr::Ptr{Cvoid}
    path::String
    lock::ReentrantLock
    function Writer(ptr::Ptr{Cvoid}, path::String)
        w = new(ptr, path, ReentrantLock())
        return finalizer(_abandon, w)
    end
end

function Writer(path::AbstractString)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    _check(ccall(_fp_zt_writer_open[], Cint, (Cstring, Ref{Ptr{Cvoid}}), path, out))
    return Writer(out[], String(path))
end

# Aborts an unfinished writer. The finalizer calls it without the lock (it
# runs when nothing else can reach the writer, and may not wait for a lock).
function _abandon(w::Writer)
    p = w.ptr
    if p != C_NULL
        w.ptr = C_NULL
        ccall(_fp_zt_writer_abort[], Cvoid, (Ptr{Cvoid},), p)
    end
    return nothing
end

function _locked(f, w::Writer)
    lock(w.lock)
    try
        p = w.ptr
        p == C_NULL && throw(ZtError(ZT_ERR_STATE,
            "the writer of $(repr(w.path)) is already finished or aborted"))
        return f(p)
    finally
        unlock(w.lock)
    end
end

Base.isopen(w::Writer) = w.ptr != C_NULL

Base.show(io::IO, w::Writer) =
    print(io, "ZTensor.Writer(", repr(w.path), isopen(w) ? "" : ", done", ")")

function _begin(p::Ptr{Cvoid}, name::AbstractString, format::AbstractString, dims::Vector{UInt64})
    _check(ccall(_fp_zt_writer_begin_object[], Cint,
                 (Ptr{Cvoid}, Cstring, Cstring, Ptr{UInt64}, Csize_t),
                 p, name, format, dims, length(dims)))
end

function _add(p::Ptr{Cvoid}, role::AbstractString, dt::AbstractString,
              ty::Union{Nothing,AbstractString}, data::Array, encoding::AbstractString)
    _check(ccall(_fp_zt_writer_add_component[], Cint,
                 (Ptr{Cvoid}, Cstring, Cstring, Cstring, Ptr{Cvoid}, UInt64, Cstring),
                 p, role, dt, ty === nothing ? Cstring(C_NULL) : ty, data, sizeof(data), encoding))
end

# Runs f() inside the object just begun and ends it; if f fails, cancels the
# object (nothing of it stays) so that the writer can take the next one.
function _in_object(f, p::Ptr{Cvoid})
    try
        f()
    catch
        # Its own status does not matter: the first failure is the news.
        ccall(_fp_zt_writer_cancel_object[], Cint, (Ptr{Cvoid},), p)
        rethrow()
    end
    # A failing end drops the object itself (ZT_ERR_INVALID).
    _check(ccall(_fp_zt_writer_end_object[], Cint, (Ptr{Cvoid},), p))
end

"""
    write_dense!(w::Writer, name, A::AbstractArray; encoding="raw", dtype=nothing, type=nothing) -> w

Adds a dense object holding `A`, of shape `size(A)`: a Julia `m×n` Matrix
becomes an object of shape `[m, n]` whose row-major data is
`permutedims(A)` (in general `permutedims(A, ndims(A):-1:1)`), so that
`read` gives `A` back. Element types: Float64, Float32, Float16, Int8 ...
Int64, UInt8 ... UInt64, Bool, ComplexF32, ComplexF64. `dtype` stores bits
under another dtype (`UInt16` data as `"bf16"`), `type` adds a logical type
(`UInt8` data as `"f8_e4m3fn"`). `encoding`: `"raw"`, `"zstd"` or `"auto"`
(zstd where it pays).

`ZtError` (`ZT_ERR_ARGUMENT`) for a name already written, a bad dtype or
encoding; the writer stays usable.
"""
function write_dense!(w::Writer, name::AbstractString, A::AbstractArray{T};
                      encoding::AbstractString="raw", dtype=nothing, type=nothing) where {T}
    dt, ty = _dtype_and_type(T, dtype, type)
    dims = UInt64[size(A)...]
    data = _rowmajor(A)
    _locked(w) do p
        if ty === nothing
            _check(ccall(_fp_zt_writer_add_dense[], Cint,
                         (Ptr{Cvoid}, Cstring, Cstring, Ptr{UInt64}, Csize_t, Ptr{Cvoid}, UInt64, Cstring),
                         p, name, dt, dims, length(dims), data, sizeof(data), encoding))
        else
            # zt_writer_add_dense takes no logical type: begin, add, end.
            _begin(p, name, "dense", dims)
            _in_object(p) do
                _add(p, "data", dt, ty, data, encoding)
            end
        end
    end
    return w
end

"""
    add_csr!(w::Writer, name, values, indices, indptr, shape; encoding="raw") -> w

Adds a `sparse_csr` object of `shape = (rows, cols)`: row `i` (0-based)
holds `values[indptr[i]+1 : indptr[i+1]]` at the 0-based columns in
`indices`, exactly as stored (scipy's layout; a Julia `SparseMatrixCSC` of
`Aᵀ` has these arrays as `nzval`, `rowval .- 1`, `colptr .- 1`). `indices`
and `indptr` are stored as u64. The library checks the structure when the
object ends: `ZtError` (`ZT_ERR_INVALID`) drops the object, and the writer
stays usable.
"""
function add_csr!(w::Writer, name::AbstractString, values::AbstractVector{T},
                  indices::AbstractVector{<:Integer}, indptr::AbstractVector{<:Integer}, shape;
                  encoding::AbstractString="raw") where {T}
    dims = _shape_arg(shape)
    length(dims) == 2 || throw(ArgumentError("a CSR matrix has a shape (rows, cols), got $(repr(shape))"))
    vt, vty = _dtype_and_type(T, nothing, nothing)
    vals = _rowmajor(values)
    idx = convert(Vector{UInt64}, indices)
    ptr = convert(Vector{UInt64}, indptr)
    _locked(w) do p
        _begin(p, name, "sparse_csr", dims)
        _in_object(p) do
            _add(p, "values", vt, vty, vals, encoding)
            _add(p, "indices", "u64", nothing, idx, encoding)
            _add(p, "indptr", "u64", nothing, ptr, encoding)
        end
    end
    return w
end

"""
    begin_object!(w::Writer, name, format, shape) -> w

Begins an object of any format (`"dense"`, `"sparse_csr"`, `"sparse_coo"`,
`"quantized_group"`, ...) of `shape` (zTensor order); then
[`add_component!`](@ref) for each component and [`end_object!`](@ref), which
checks the object against its format, or [`cancel_object!`](@ref).
"""
function begin_object!(w::Writer, name::AbstractString, format::AbstractString, shape)
    dims = _shape_arg(shape)
    _locked(p -> _begin(p, name, format, dims), w)
    return w
end

"""
    add_component!(w::Writer, role, data::AbstractArray; dtype=nothing, type=nothing, encoding="raw") -> w

Adds a component to the object begun last. Its elements are stored in
row-major order of `size(data)` (a vector as it is; a matrix as
`permutedims(data)`), with `dtype` and `type` as for [`write_dense!`](@ref).
"""
function add_component!(w::Writer, role::AbstractString, data::AbstractArray{T};
                        dtype=nothing, type=nothing, encoding::AbstractString="raw") where {T}
    dt, ty = _dtype_and_type(T, dtype, type)
    buf = _rowmajor(data)
    _locked(p -> _add(p, role, dt, ty, buf, encoding), w)
    return w
end

"""
    end_object!(w::Writer) -> w

Ends the object begun last after checking it against its format
(`ZtError` with `ZT_ERR_INVALID` drops it).
"""
function end_object!(w::Writer)
    _locked(p -> _check(ccall(_fp_zt_writer_end_object[], Cint, (Ptr{Cvoid},), p)), w)
    return w
end

"""
    cancel_object!(w::Writer) -> w

Drops the object begun last, with every component added to it.
"""
function cancel_object!(w::Writer)
    _locked(p -> _check(ccall(_fp_zt_writer_cancel_object[], Cint, (Ptr{Cvoid},), p)), w)
    return w
end

"""
    set_attributes_json!(w::Writer, json) -> w

Sets the file's attributes from a JSON object text (stored as CBOR: integers
stay integers, floats floats).
"""
function set_attributes_json!(w::Writer, json::AbstractString)
    _locked(w) do p
        _check(ccall(_fp_zt_writer_set_file_attributes_json[], Cint, (Ptr{Cvoid}, Cstring), p, json))
    end
    return w
end

"""
    set_object_attributes_json!(w::Writer, json) -> w

Sets the attributes of the object begun last, from a JSON object text.
"""
function set_object_attributes_json!(w::Writer, json::AbstractString)
    _locked(w) do p
        _check(ccall(_fp_zt_writer_set_object_attributes_json[], Cint, (Ptr{Cvoid}, Cstring), p, json))
    end
    return w
end

"""
    finish!(w::Writer)

Writes the manifest and publishes the file at its path (`zt_writer_finish`:
fsync, rename, fsync of the directory). The writer is spent afterwards,
whether it succeeded or not: on failure (`ZtError`) nothing was published
and the path is as it was. A second `finish!` throws `ZT_ERR_STATE`.
"""
function finish!(w::Writer)
    _locked(w) do p
        w.ptr = C_NULL      # zt_writer_finish frees the writer, failing or not
        _check(ccall(_fp_zt_writer_finish[], Cint, (Ptr{Cvoid},), p))
    end
    return nothing
end

"""
    abort!(w::Writer)

Gives the file up (`zt_writer_abort`): the temporary file is removed and
nothing appears at the path. Idempotent; nothing happens after `finish!`.
"""
function abort!(w::Writer)
    lock(w.lock)
    try
        _abandon(w)
    finally
        unlock(w.lock)
    end
    return nothing
end

end # module
