# The ZTensor package against the installed libztensor: write a file, reopen
# it, check names, shapes and values (a matrix keeps its orientation), sparse
# decoding, verify counts, errors as a status and a message naming the
# object, closed readers, and writers that are aborted or dropped.
#
#   ZTENSOR_LIBRARY=/usr/local/lib/libztensor.so.1 julia --project=bindings/julia/ZTensor \
#       -e 'using Pkg; Pkg.test()'

using Test
using ZTensor
using ZTensor: ZT_ERR_IO, ZT_ERR_INVALID, ZT_ERR_UNSUPPORTED, ZT_ERR_LIMIT, ZT_ERR_NOT_FOUND,
               ZT_ERR_ARGUMENT, ZT_ERR_STATE

# The exception that f() throws, or nothing.
function caught(f)
    try
        f()
    catch e
        return e
    end
    return nothing
end

iszterror(e, status) = e isa ZtError && e.status == status

# What a task returned, or the exception that ended it.
function outcome(t::Task)
    try
        return fetch(t)
    catch e
        return e
    end
end

# A writer that is dropped unfinished: its finalizer must abort it.
@noinline function drop_writer(path)
    w = Writer(path)
    write_dense!(w, "x", UInt8[1, 2, 3])
    return nothing
end

@testset "ZTensor" begin
    @testset "library" begin
        v = ZTensor.version()
        @test v isa VersionNumber && v.major == 1
        @test ZTensor.status_name(ZT_ERR_NOT_FOUND) == "ZT_ERR_NOT_FOUND"
        @test !isempty(ZTensor.library())
    end

    dir = mktempdir()
    path = joinpath(dir, "model.zt")

    weight = Float32[1 2 3; 4 5 6]                 # 2 x 3
    ids = collect(Int64, 0:999) .* 3 .- 7
    bf16 = UInt16[0x3f80, 0xc000, 0x0000]          # 1.0, -2.0, 0.0 as bfloat16 bits
    # [[1, 0, 2], [0, 0, 3]] as CSR
    nz, cols, rowptr = [1.0, 2.0, 3.0], UInt64[0, 2, 2], UInt64[0, 2, 3]
    cube = reshape(Int16.(1:24), 2, 3, 4)          # 2 x 3 x 4
    flags = [true, false, true, true]
    z = ComplexF32[1+2im 3-4im; -5im 6]
    scalar = fill(2.5)                             # 0-dimensional

    @testset "write" begin
        w = Writer(path)
        @test isopen(w)
        @test write_dense!(w, "weight", weight) === w
        write_dense!(w, "ids", ids; encoding="zstd")
        write_dense!(w, "half", bf16; dtype="bf16")
        add_csr!(w, "m", nz, cols, rowptr, (2, 3))
        write_dense!(w, "cube", cube)
        write_dense!(w, "flags", flags)
        write_dense!(w, "z", z)
        write_dense!(w, "s", scalar)
        set_attributes_json!(w, """{"framework": "julia"}""")

        # Refusals leave the writer usable.
        err = caught(() -> write_dense!(w, "bad", Float32[1, 2, 3]; dtype="f33"))
        @test iszterror(err, ZT_ERR_ARGUMENT)
        err = caught(() -> write_dense!(w, "weight", weight))         # a name already written
        @test iszterror(err, ZT_ERR_ARGUMENT) && occursin("\"weight\"", err.message)
        err = caught(() -> add_csr!(w, "broken", nz, cols, UInt64[0, 2, 5], (2, 3)))
        @test iszterror(err, ZT_ERR_INVALID)                          # indptr[end] != nnz: dropped
        @test caught(() -> write_dense!(w, "any", Any[1, 2])) isa ArgumentError
        @test caught(() -> write_dense!(w, "nul\0name", weight)) isa ArgumentError
        @test caught(() -> write_dense!(w, "wide", Int32[1]; dtype="f64")) isa ArgumentError
        @test caught(() -> begin_object!(w, "neg", "dense", (2, -1))) isa ArgumentError

        @test !isfile(path)                        # nothing at the path before finish!
        finish!(w)
        @test isfile(path) && !isopen(w)
        @test iszterror(caught(() -> finish!(w)), ZT_ERR_STATE)
        @test iszterror(caught(() -> write_dense!(w, "late", weight)), ZT_ERR_STATE)
        abort!(w)                                  # nothing to do after finish!
        @test isfile(path)
    end

    @testset "read" begin
        r = ZTensor.open(path)
        try
            @test isopen(r)
            @test keys(r) == ["weight", "ids", "half", "m", "cube", "flags", "z", "s"]
            @test length(r) == 8
            @test haskey(r, "cube") && !haskey(r, "nope")
            @test file_version(r) == "1.2.0"
            @test file_format(r) == "zt"

            @test format(r, "weight") == "dense"
            @test shape(r, "weight") == [2, 3]
            @test dtype(r, "weight") == "f32"
            @test component_type(r, "weight") === nothing
            @test components(r, "weight") == ["data"]
            A = read(r, "weight")
            @test A isa Matrix{Float32} && size(A) == (2, 3)
            @test A == weight && A[1, 3] == 3 && A[2, 1] == 4     # orientation kept
            @test r["weight"] == weight
            # The file holds row after row (row-major).
            @test reinterpret(Float32, component_bytes(r, "weight", "data")) == Float32[1, 2, 3, 4, 5, 6]
            @test read_f32(r, "weight") == weight
            @test read_f64(r, "weight") == Float64.(weight)

            @test read(r, "ids") isa Vector{Int64}
            @test read(r, "ids") == ids

            @test dtype(r, "half") == "bf16"
            err = caught(() -> read(r, "half"))       # no Julia element type for bf16
            @test iszterror(err, ZT_ERR_UNSUPPORTED) && occursin("\"half\"", err.message)
            @test read_f32(r, "half") == Float32[1, -2, 0]
            @test reinterpret(UInt16, component_bytes(r, "half", "data")) == bf16

            @test format(r, "m") == "sparse_csr"
            @test shape(r, "m") == [2, 3]
            @test sort(components(r, "m")) == ["indices", "indptr", "values"]
            @test dtype(r, "m", "values") == "f64"
            @test reinterpret(Float64, component_bytes(r, "m", "values")) == nz
            @test reinterpret(UInt64, component_bytes(r, "m", "indices")) == cols
            @test reinterpret(UInt64, component_bytes(r, "m", "indptr")) == rowptr
            @test read_f32(r, "m") == Float32[1 0 2; 0 0 3]
            err = caught(() -> read(r, "m"))
            @test iszterror(err, ZT_ERR_ARGUMENT) && occursin("\"m\"", err.message)
            @test iszterror(caught(() -> dtype(r, "m")), ZT_ERR_NOT_FOUND)         # no "data"
            @test iszterror(caught(() -> component_bytes(r, "m", "nope")), ZT_ERR_NOT_FOUND)

            @test shape(r, "cube") == [2, 3, 4]
            C = read(r, "cube")
            @test C isa Array{Int16,3} && C == cube
            @test reinterpret(Int16, component_bytes(r, "cube", "data")) ==
                  vec(permutedims(cube, (3, 2, 1)))

            @test read(r, "flags") isa Vector{Bool}
            @test read(r, "flags") == flags
            @test read_f32(r, "flags") == Float32[1, 0, 1, 1]

            @test dtype(r, "z") == "f32" && component_type(r, "z") == "complex64"
            @test read(r, "z") isa Matrix{ComplexF32}
            @test read(r, "z") == z
            @test read_f32(r, "z") == z

            @test shape(r, "s") == Int[]
            S = read(r, "s")
            @test ndims(S) == 0 && S[] == 2.5

            json = manifest_json(r)
            @test occursin("framework", json) && occursin("julia", json)

            @test verify(r) == (10, 0)

            err = caught(() -> format(r, "nope"))
            @test iszterror(err, ZT_ERR_NOT_FOUND)
            @test err.name == "ZT_ERR_NOT_FOUND" && occursin("nope", err.message)
            @test sprint(showerror, err) == "ZtError: ZT_ERR_NOT_FOUND: " * err.message
            @test caught(() -> read(r, "nul\0name")) isa ArgumentError
        finally
            close(r)
        end
    end

    @testset "open options" begin
        ZTensor.open(path; copy=true) do r
            @test read(r, "weight") == weight
            @test read(r, "ids") == ids
        end
        ZTensor.open(path; allow_foreign=true) do r
            @test file_format(r) == "zt"
        end
        r = ZTensor.open(path; max_decoded_bytes=64)
        @test read(r, "weight") == weight                            # raw, 24 bytes
        @test iszterror(caught(() -> read(r, "ids")), ZT_ERR_LIMIT)  # 8000 decoded bytes
        close(r)
        @test ZTensor.open(r -> shape(r, "cube"), path) == [2, 3, 4]
        r = Reader(path)
        @test r isa Reader && keys(r)[1] == "weight"
        close(r)
    end

    @testset "errors" begin
        err = caught(() -> ZTensor.open(joinpath(dir, "missing.zt")))
        @test iszterror(err, ZT_ERR_IO) && occursin("missing.zt", err.message)
        # zt_open_url without a network: its arguments are checked first.
        err = caught(() -> ZTensor.open_url("ftp://example.invalid/model.zt"))
        @test iszterror(err, ZT_ERR_ARGUMENT) && occursin("ftp://example.invalid/model.zt", err.message)
        err = caught(() -> ZTensor.open_url("https://example.invalid/model.zt";
                                            headers=["Authorization" => "Bearer t", "no colon"],
                                            timeout_ms=1000, retries=0, connections=1))
        @test iszterror(err, ZT_ERR_ARGUMENT) && occursin("no colon", err.message)
        @test caught(() -> ZTensor.open_url("https://example.invalid/m.zt"; headers=["X: a\nb"])) isa ArgumentError
        @test caught(() -> ZTensor.open_url("https://example.invalid/m.zt"; retries=-1)) isa ArgumentError
        # No refusal shows a credential: not a header's value, not a URL's.
        err = caught(() -> ZTensor.open_url("https://example.invalid/m.zt";
                                            headers=["Authorization: Bearer s3cret\nX: y"]))
        @test err isa ArgumentError && !occursin("s3cret", sprint(showerror, err))
        err = caught(() -> ZTensor.open_url("https://u:pa/ss@example.invalid/m.zt?sig=s3cret\0"))
        @test err isa ArgumentError && !occursin("s3cret", sprint(showerror, err)) &&
              !occursin("pa/ss", sprint(showerror, err))
        @test ZTensor._url_for_messages("https://u:p@example.invalid/m.zt?sig=s3cret#f") ==
              "https://example.invalid/m.zt"
        @test !occursin("pa/ss", ZTensor._url_for_messages("https://u:pa/ss@example.invalid/m.zt"))
    end

    @testset "close" begin
        r = ZTensor.open(path)
        A = read(r, "weight")
        close(r)
        @test !isopen(r)
        close(r)                                   # idempotent
        @test A == weight                          # results are copies
        err = caught(() -> keys(r))
        @test iszterror(err, ZT_ERR_STATE) && occursin("closed", err.message)
        @test iszterror(caught(() -> read(r, "weight")), ZT_ERR_STATE)
        @test iszterror(caught(() -> verify(r)), ZT_ERR_STATE)
        @test occursin("closed", sprint(show, r))
    end

    @testset "tasks and threads" begin
        ZTensor.open(path) do r
            tasks = [Threads.@spawn read(r, "cube") for _ in 1:8]
            @test all(t -> fetch(t) == cube, tasks)
        end
        # A close while calls run: those calls finish, later ones throw.
        r = ZTensor.open(path)
        tasks = [Threads.@spawn read_f32(r, "ids") for _ in 1:8]
        close(r)
        for o in map(outcome, tasks)
            @test o == Float32.(ids) ||
                  (o isa TaskFailedException && iszterror(o.task.exception, ZT_ERR_STATE))
        end
        @test !isopen(r)
    end

    @testset "abort and finalizer" begin
        w = Writer(joinpath(dir, "never.zt"))
        write_dense!(w, "x", UInt8[1, 2, 3])
        abort!(w)
        abort!(w)                                  # idempotent
        @test !isopen(w)
        @test iszterror(caught(() -> finish!(w)), ZT_ERR_STATE)

        drop_writer(joinpath(dir, "dropped.zt"))
        for _ in 1:3
            GC.gc()
        end
        @test readdir(dir) == ["model.zt"]
    end
end
