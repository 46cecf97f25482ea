# roundtrip.jl - libztensor from Julia through `ccall`, no package needed.
#
# Documentation first: Julia is not packaged on the Debian systems this
# project builds on, so CTest runs this file only where a `julia` is found
# (ffi.julia, otherwise reported as Skipped). It mirrors the Python test
# (python/tests/test_ztensor.py): write a file, reopen it, check names,
# shapes and values, and see errors come back as a status and a message.
#
#   ZTENSOR_LIBRARY=/usr/lib/x86_64-linux-gnu/libztensor.so.1 julia roundtrip.jl
#
# Layout: zTensor arrays are row-major (C order), Julia's are column-major.
# A Julia matrix A (m x n) is written as permutedims(A) with shape [m, n],
# and read back as permutedims(reshape(v, n, m)).

using Test

const LIB = get(ENV, "ZTENSOR_LIBRARY", "libztensor")
const ZT_OK = Cint(0)
const ZT_ERR_IO = Cint(1)
const ZT_ERR_NOT_FOUND = Cint(7)
const ZT_ERR_ARGUMENT = Cint(8)

struct ZtError <: Exception
    status::Cint
    name::String
    message::String
end
Base.showerror(io::IO, e::ZtError) = print(io, e.name, ": ", e.message)

# The message is thread-local and valid until the next call: read it at once.
function check(status::Cint)
    status == ZT_OK && return nothing
    name = unsafe_string(ccall((:zt_status_name, LIB), Cstring, (Cint,), status))
    message = unsafe_string(ccall((:zt_last_error, LIB), Cstring, ()))
    throw(ZtError(status, name, message))
end

# --- writing ---------------------------------------------------------------

function writer_open(path::AbstractString)
    w = Ref{Ptr{Cvoid}}(C_NULL)
    check(ccall((:zt_writer_open, LIB), Cint, (Cstring, Ref{Ptr{Cvoid}}), path, w))
    return w[]
end

# `data` must already be in row-major order (see the note at the top).
function add_dense(w, name, dtype, shape::Vector{UInt64}, data::Array; encoding = "raw")
    check(ccall((:zt_writer_add_dense, LIB), Cint,
                (Ptr{Cvoid}, Cstring, Cstring, Ptr{UInt64}, Csize_t, Ptr{Cvoid}, UInt64, Cstring),
                w, name, dtype, shape, length(shape), data, sizeof(data), encoding))
end

function add_csr(w, name, shape::Vector{UInt64}, values::Vector{Float64},
                 indices::Vector{UInt64}, indptr::Vector{UInt64})
    check(ccall((:zt_writer_begin_object, LIB), Cint,
                (Ptr{Cvoid}, Cstring, Cstring, Ptr{UInt64}, Csize_t),
                w, name, "sparse_csr", shape, length(shape)))
    for (role, dtype, a) in (("values", "f64", values), ("indices", "u64", indices),
                             ("indptr", "u64", indptr))
        check(ccall((:zt_writer_add_component, LIB), Cint,
                    (Ptr{Cvoid}, Cstring, Cstring, Ptr{Cchar}, Ptr{Cvoid}, UInt64, Cstring),
                    w, role, dtype, C_NULL, a, sizeof(a), "raw"))
    end
    check(ccall((:zt_writer_end_object, LIB), Cint, (Ptr{Cvoid},), w))
end

finish(w) = check(ccall((:zt_writer_finish, LIB), Cint, (Ptr{Cvoid},), w))
abort(w) = ccall((:zt_writer_abort, LIB), Cvoid, (Ptr{Cvoid},), w)

# --- reading ---------------------------------------------------------------

function zt_open(path::AbstractString)
    r = Ref{Ptr{Cvoid}}(C_NULL)
    check(ccall((:zt_open, LIB), Cint, (Cstring, Ref{Ptr{Cvoid}}), path, r))
    return r[]
end

zt_close(r) = ccall((:zt_close, LIB), Cvoid, (Ptr{Cvoid},), r)

function object_names(r)
    n = ccall((:zt_object_count, LIB), Csize_t, (Ptr{Cvoid},), r)
    return [unsafe_string(ccall((:zt_object_name, LIB), Cstring, (Ptr{Cvoid}, Csize_t), r, i))
            for i in 0:n-1]
end

function find_object(r, name)
    i = Ref{Csize_t}(0)
    check(ccall((:zt_object_find, LIB), Cint, (Ptr{Cvoid}, Cstring, Ref{Csize_t}), r, name, i))
    return i[]
end

object_format(r, i) =
    unsafe_string(ccall((:zt_object_format, LIB), Cstring, (Ptr{Cvoid}, Csize_t), r, i))

function object_shape(r, i)
    ndim = Ref{Csize_t}(0)
    p = ccall((:zt_object_shape, LIB), Ptr{UInt64}, (Ptr{Cvoid}, Csize_t, Ref{Csize_t}), r, i, ndim)
    return [unsafe_load(p, k) for k in 1:ndim[]]
end

component_dtype(r, i, role) =
    unsafe_string(ccall((:zt_component_dtype, LIB), Cstring, (Ptr{Cvoid}, Csize_t, Cstring),
                        r, i, role))

# A zero-copy view of a component's decoded elements: valid until zt_close.
function component(r, i, role, ::Type{T}) where {T}
    data = Ref{Ptr{Cvoid}}(C_NULL)
    n = Ref{UInt64}(0)
    check(ccall((:zt_component_map, LIB), Cint,
                (Ptr{Cvoid}, Csize_t, Cstring, Ref{Ptr{Cvoid}}, Ref{UInt64}), r, i, role, data, n))
    return unsafe_wrap(Array, Ptr{T}(data[]), Int(n[] ÷ sizeof(T)))
end

# A dense object of any numeric type (bf16, FP8, integers, ...) as Float32.
function read_f32(r, i)
    count = Ref{UInt64}(0)
    check(ccall((:zt_object_value_count, LIB), Cint, (Ptr{Cvoid}, Csize_t, Ref{UInt64}), r, i, count))
    out = Vector{Float32}(undef, count[])
    written = Ref{UInt64}(0)
    check(ccall((:zt_object_read_f32, LIB), Cint,
                (Ptr{Cvoid}, Csize_t, Ptr{Float32}, UInt64, Ref{UInt64}),
                r, i, out, length(out), written))
    return out
end

function verify(r)
    checked, unchecked = Ref{UInt64}(0), Ref{UInt64}(0)
    check(ccall((:zt_verify, LIB), Cint, (Ptr{Cvoid}, Ref{UInt64}, Ref{UInt64}), r, checked, unchecked))
    return (checked[], unchecked[])
end

# --- the round trip ----------------------------------------------------------

@testset "ztensor from Julia" begin
    dir = mktempdir()
    path = joinpath(dir, "model.zt")

    weight = Float32[1 2 3; 4 5 6]                 # 2 x 3
    ids = collect(Int64, 0:999) .* 3 .- 7
    bf16 = UInt16[0x3f80, 0xc000, 0x0000]          # 1.0, -2.0, 0.0 as bfloat16 bits
    # [[1, 0, 2], [0, 0, 3]] as CSR
    values, indices, indptr = [1.0, 2.0, 3.0], UInt64[0, 2, 2], UInt64[0, 2, 3]

    w = writer_open(path)
    add_dense(w, "weight", "f32", UInt64[2, 3], permutedims(weight))
    add_dense(w, "ids", "i64", UInt64[1000], ids; encoding = "zstd")
    add_dense(w, "half", "bf16", UInt64[3], bf16)
    add_csr(w, "m", UInt64[2, 3], values, indices, indptr)
    err = try
        add_dense(w, "bad", "f32", UInt64[2, 2], Float32[1, 2, 3]); nothing
    catch e
        e
    end
    @test err isa ZtError && err.status == ZT_ERR_ARGUMENT
    finish(w)

    r = zt_open(path)
    try
        @test object_names(r) == ["weight", "ids", "half", "m"]

        i = find_object(r, "weight")
        @test object_format(r, i) == "dense"
        @test object_shape(r, i) == [2, 3]
        @test component_dtype(r, i, "data") == "f32"
        v = component(r, i, "data", Float32)
        @test permutedims(reshape(v, 3, 2)) == weight

        @test component(r, find_object(r, "ids"), "data", Int64) == ids
        @test read_f32(r, find_object(r, "half")) == Float32[1, -2, 0]

        m = find_object(r, "m")
        @test object_format(r, m) == "sparse_csr"
        @test component(r, m, "values", Float64) == values
        @test component(r, m, "indices", UInt64) == indices
        @test component(r, m, "indptr", UInt64) == indptr

        @test verify(r) == (6, 0)
        err = try
            find_object(r, "nope"); nothing
        catch e
            e
        end
        @test err isa ZtError && err.status == ZT_ERR_NOT_FOUND && err.name == "ZT_ERR_NOT_FOUND"
    finally
        zt_close(r)
    end

    err = try
        zt_open(joinpath(dir, "missing.zt")); nothing
    catch e
        e
    end
    @test err isa ZtError && err.status == ZT_ERR_IO && !isempty(err.message)

    w = writer_open(joinpath(dir, "never.zt"))
    add_dense(w, "x", "u8", UInt64[3], UInt8[1, 2, 3])
    abort(w)
    @test readdir(dir) == ["model.zt"]
end
