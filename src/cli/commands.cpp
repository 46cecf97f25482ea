// The command table of `zt`, its help texts and the command-line dispatch:
// everything of the tool but main(), so that tests and fuzz targets run the
// commands in-process exactly as the tool does.
#include "commands.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "foreign/foreign.h"
#include "ztensor.h"

namespace zt::cli {

namespace {

// The version from the public header's macros, the one source of it (the
// header is included for them only: the tool calls the core, not the C ABI).
std::string version_text() {
  return std::to_string(ZT_VERSION_MAJOR) + "." + std::to_string(ZT_VERSION_MINOR) + "." +
         std::to_string(ZT_VERSION_PATCH);
}

constexpr std::string_view kExitCodes =
    "Exit codes:\n"
    "  0  success (diff: no differences; verify: every check held)\n"
    "  1  diff found differences, or verify found a file that breaks a rule\n"
    "  2  usage error (unknown command or option, missing argument)\n"
    "  3  I/O error: a file could not be opened, read or written\n"
    "  4  invalid input: a file is not valid in its format (bad header, offsets,\n"
    "     sizes, digests, limits) or holds something zt cannot read\n"
    "  5  refused: the request cannot be done as asked (no such object, name\n"
    "     clash, sparse object to safetensors without --densify, ...)\n";

constexpr std::string_view kWriteOptions =
    "  --digest ALGO        xxh3, sha256 or none (default: xxh3; compress,\n"
    "                       decompress and rm keep the input's)\n"
    "  --threads N          compression threads (default: all cores)\n"
    "  --no-canonical       v2 output is in canonical form (v2 spec 6.3: objects and\n"
    "                       parts in name order, raw, identical parts sharing one\n"
    "                       blob, 64 KiB placement: the same tensors give the same\n"
    "                       bytes) unless zstd or a digest other than xxh3 is asked\n"
    "                       for, or this option: then encodings are kept\n"
    "  --planes             v2: every component as byte planes (libztensor.byte_planes/1:\n"
    "                       each element's bytes split into planes, floats' sign beside\n"
    "                       the mantissa, each plane zstd-coded or stored; bf16 weights\n"
    "                       about 1.49x where zstd makes 1.28x)\n";

// The container of commands that rewrite .zt files (convert has its own).
constexpr std::string_view kKeepVersion =
    "  --format-version V   1.2 or 2 (default: the input's container; merge: 1.2)\n";

constexpr OptSpec kInfoOpts[] = {{"--json"}};
constexpr OptSpec kLsOpts[] = {{"--long", OptSpec::flag, "-l"}};
constexpr OptSpec kDumpOpts[] = {{"--compact"}};
constexpr OptSpec kVerifyOpts[] = {{"--verbose", OptSpec::flag, "-v"}};
constexpr OptSpec kIdOpts[] = {{"--algorithm", OptSpec::value}};
constexpr OptSpec kCatOpts[] = {
    {"--component", OptSpec::value, "-c"}, {"--full"}, {"--max-values", OptSpec::value}};
constexpr OptSpec kExportOpts[] = {{"--output", OptSpec::value, "-o"},
                                   {"--component", OptSpec::value, "-c"}};
constexpr OptSpec kConvertOpts[] = {{"--compress", OptSpec::optional_value},
                                    {"--planes"},
                                    {"--digest", OptSpec::value},
                                    {"--threads", OptSpec::value},
                                    {"--densify"},
                                    {"--format-version", OptSpec::value},
                                    {"--no-canonical"},
                                    {"--shard-size", OptSpec::value},
                                    {"--skip-unknown"},
                                    {"--keep-shards"},
                                    {"--hf"}};
constexpr OptSpec kRecodeOpts[] = {{"--output", OptSpec::value, "-o"},
                                   {"--in-place"},
                                   {"--level", OptSpec::value},
                                   {"--auto"},
                                   {"--planes"},
                                   {"--min-ratio", OptSpec::value},
                                   {"--digest", OptSpec::value},
                                   {"--threads", OptSpec::value},
                                   {"--format-version", OptSpec::value},
                                   {"--no-canonical"}};
constexpr OptSpec kDecompressOpts[] = {
    {"--output", OptSpec::value, "-o"},   {"--in-place"},
    {"--digest", OptSpec::value},         {"--threads", OptSpec::value},
    {"--format-version", OptSpec::value}, {"--no-canonical"}};
constexpr OptSpec kMergeOpts[] = {{"--output", OptSpec::value, "-o"},
                                  {"--rename"},
                                  {"--compress", OptSpec::optional_value},
                                  {"--digest", OptSpec::value},
                                  {"--threads", OptSpec::value},
                                  {"--format-version", OptSpec::value},
                                  {"--no-canonical"}};
constexpr OptSpec kRmOpts[] = {{"--output", OptSpec::value, "-o"},
                               {"--digest", OptSpec::value},
                               {"--threads", OptSpec::value},
                               {"--format-version", OptSpec::value},
                               {"--no-canonical"}};
constexpr OptSpec kAppendOpts[] = {{"--compress", OptSpec::optional_value},
                                   {"--digest", OptSpec::value},
                                   {"--threads", OptSpec::value},
                                   {"--format-version", OptSpec::value}};
constexpr OptSpec kDiffOpts[] = {{"--quiet", OptSpec::flag, "-q"}};

const std::string kConvertUsage =
    std::string(
        "Usage: zt convert IN OUT [options]\n"
        "\n"
        "Converts between formats, chosen by extension:\n"
        "  IN   .zt, .safetensors, .gguf (v2, v3), .npy, .npz, PyTorch .pt/.pth/.bin/.ckpt\n"
        "       (torch.save: zip or legacy; the pickle is read, never run), .onnx (the\n"
        "       initializers), a sharded Hugging Face checkpoint's .index.json\n"
        "  OUT  .zt, .safetensors or .gguf (v3; raw GGML blocks and metadata types\n"
        "       come back as they were read)\n"
        "\n"
        "safetensors -> zt -> safetensors keeps tensor bytes, dtypes, shapes and\n"
        "__metadata__ (as file attributes). F8_E4M3/F8_E5M2 become u8 typed\n"
        "f8_e4m3fn/f8_e5m2, C64 becomes f32 typed complex64. GGUF tensors come out\n"
        "in row-major shape; block-quantized GGML types stay raw u8 with ggml_type\n"
        "and logical_shape attributes; metadata become file attributes (types in\n"
        "\"gguf.types\"). npy big-endian data is swapped, Fortran order transposed.\n"
        "\n"
        "Options:\n"
        "  --compress[=LEVEL]   zstd-compress every component (level 1..22, default 3);\n"
        "                       without it, .zt inputs keep their encodings (but see\n"
        "                       --no-canonical for v2 output)\n"
        "  --format-version V   the .zt container written: 1.2 (default) or 2 (zTensor\n"
        "                       v2: layout ids, seekable zstd, digests over decoded\n"
        "                       bytes); objects the target cannot express (1.2's\n"
        "                       quantized_group in v2, v2-only layouts in 1.2) are\n"
        "                       refused (exit 5) unless --densify\n"
        "  --shard-size BYTES   with --format-version 2: split OUT into OUT's root and\n"
        "                       data shards <stem>-00001-<hex>.zt ... of at most BYTES each\n"
        "                       (a larger part gets a shard of its own; v2 spec 7)\n"
        "  --keep-shards        with --format-version 2 and a sharded input (a Hugging\n"
        "                       Face index.json, a sharded v2 model): the same split,\n"
        "                       each input shard's tensors in one data shard of OUT\n"
        "  --skip-unknown       GGUF tensors of a GGML type zt does not know are left out\n"
        "                       (named on stderr and in the file attribute gguf.skipped)\n"
        "                       instead of refusing the file\n") +
    std::string(kWriteOptions) +
    "  --densify            write sparse and quantized objects (and dtypes safetensors\n"
    "                       lacks) as dense f32/f64 values; without it, writing them\n"
    "                       to .safetensors is refused, naming them\n"
    "  --hf                 OUT is a Hugging Face checkpoint folder: OUT/model.safetensors\n"
    "                       (quantized layers back as the checkpoint's own tensors,\n"
    "                       in the safetensors library's order) and OUT/config.json\n"
    "                       as converted from (the way back of a quantized checkpoint);\n"
    "                       a model read from an index: its shards and the index\n";

const std::string kCompressUsage =
    std::string(
        "Usage: zt compress FILE (-o OUT | --in-place) [options]\n"
        "\n"
        "Re-encodes every component of a .zt file with zstd.\n"
        "\n"
        "Options:\n"
        "  -o, --output OUT     write OUT (FILE is left alone)\n"
        "  --in-place           replace FILE (atomically: a crash leaves it intact)\n"
        "  --level N            zstd level 1..22 (default 3)\n"
        "  --auto               keep a component raw if zstd saves too little\n"
        "  --min-ratio R        with --auto: keep zstd if stored <= R x raw (default 0.9)\n") +
    std::string(kKeepVersion) + std::string(kWriteOptions);

const std::string kDecompressUsage =
    std::string(
        "Usage: zt decompress FILE (-o OUT | --in-place) [options]\n"
        "\n"
        "Re-encodes every component of a .zt file raw (memory-mappable).\n"
        "\n"
        "Options:\n"
        "  -o, --output OUT     write OUT (FILE is left alone)\n"
        "  --in-place           replace FILE (atomically)\n") +
    std::string(kKeepVersion) + std::string(kWriteOptions);

const std::string kMergeUsage =
    std::string(
        "Usage: zt merge A B... -o OUT.zt [options]\n"
        "\n"
        "Writes the objects of every input (any readable format) into one .zt file,\n"
        "in order. An object name in two inputs is refused unless --rename is given,\n"
        "which renames the later one NAME.K (K = the input's position, from 1).\n"
        "File attributes are merged; for a key set twice the first input wins.\n"
        "\n"
        "Options:\n"
        "  -o, --output OUT     the merged file (required)\n"
        "  --rename             keep clashing objects under new names\n"
        "  --compress[=LEVEL]   zstd-compress every component\n") +
    std::string(kKeepVersion) + std::string(kWriteOptions);

const std::string kRmUsage =
    std::string(
        "Usage: zt rm FILE NAME... -o OUT.zt [options]\n"
        "\n"
        "Writes FILE without the named objects. Every NAME must exist.\n"
        "\n"
        "Options:\n"
        "  -o, --output OUT     the new file (required; may be FILE itself)\n") +
    std::string(kKeepVersion) + std::string(kWriteOptions);

const Command kCommands[] = {
    {"info", "version, sizes, attributes and a table of objects",
     "Usage: zt info FILE [--json]\n"
     "\n"
     "Shows the format version, object count, file, stored and decoded sizes,\n"
     "file attributes, then one row per object: name, format, shape,\n"
     "dtype/type, encoding, stored bytes, compression ratio and digest\n"
     "(objects of several components get a row per component). Works on any\n"
     "readable file (.zt, .safetensors, .gguf, .npy, .npz, PyTorch, .onnx,\n"
     ".index.json).\n"
     "\n"
     "Options:\n"
     "  --json   the same as one JSON document, for machines\n",
     kInfoOpts, run_info},
    {"ls", "object names, one a line",
     "Usage: zt ls FILE [-l]\n"
     "\n"
     "Prints object names, one a line, in file order.\n"
     "\n"
     "Options:\n"
     "  -l, --long   also format, shape and dtype\n",
     kLsOpts, run_ls},
    {"dump", "the manifest as JSON",
     "Usage: zt dump FILE [--compact]\n"
     "\n"
     "Prints the manifest of a .zt file as JSON in the 1.2.0 vocabulary (files\n"
     "of older generations appear upgraded). CBOR byte strings appear as\n"
     "{\"$bytes\": \"<base64>\"}.\n"
     "\n"
     "Options:\n"
     "  --compact   one line instead of indented\n",
     kDumpOpts, run_dump},
    {"verify", "deep check: digests, decoding, content rules",
     "Usage: zt verify FILE... [-v]\n"
     "\n"
     "Checks each file completely: the container and manifest (done on open),\n"
     "then every component: its digest over the stored bytes, its decoding\n"
     "(zstd to the stated size), and the rules that need data (CSR/COO index\n"
     "structure, bool bytes, quantized_group sizes). Prints what was checked;\n"
     "every failing object is named with the rule it breaks. Exits 0 only if\n"
     "everything holds in every file, 1 if a file breaks a rule, 3 if a file\n"
     "cannot be read. Foreign files get their structure checked.\n"
     "\n"
     "Options:\n"
     "  -v, --verbose   one line per object\n",
     kVerifyOpts, run_verify},
    {"id", "the content digest of a v2 model",
     "Usage: zt id FILE... [--algorithm sha256|xxh3]\n"
     "\n"
     "Prints the content digest of each zTensor v2 file (v2 spec section 6.4)\n"
     "and its name, like sha256sum: the identity of the model's tensors,\n"
     "computed from the manifest alone (shapes, layouts, attributes, dtypes,\n"
     "types and every part's digest). It does not change when the model is\n"
     "re-encoded, aligned differently or split into shards. zt verify checks\n"
     "that the part digests match the data. Exits 4 for a 1.x or foreign file\n"
     "and for a model with a part without a digest (the digest is undefined).\n"
     "\n"
     "Options:\n"
     "  --algorithm ALGO   sha256 (the default) or xxh3\n",
     kIdOpts, run_id},
    {"cat", "print values like numpy (any format decoded)",
     "Usage: zt cat FILE NAME [options]\n"
     "\n"
     "Prints an object's values as numpy prints arrays: shortest text at up to\n"
     "8 decimals, aligned columns, and for more than 1000 elements the first\n"
     "and last 3 along each dimension. Any dtype and logical type (bf16, FP8,\n"
     "complex) is decoded; sparse objects are densified and quantized ones\n"
     "dequantised.\n"
     "\n"
     "Options:\n"
     "  -c, --component ROLE   print one component's stored elements instead\n"
     "  --full                 print every element\n"
     "  --max-values N         refuse to densify into more values (default 2^27)\n",
     kCatOpts, run_cat},
    {"export", "write one object as .npy",
     "Usage: zt export FILE NAME -o OUT.npy [-c ROLE]\n"
     "\n"
     "Writes an object as a NumPy .npy file: dense data of numpy's dtypes as\n"
     "stored; bf16 and FP8 as float32 values; sparse and quantized objects\n"
     "densified (float32, or float64 for f64 values).\n"
     "\n"
     "Options:\n"
     "  -o, --output OUT       the .npy file (required)\n"
     "  -c, --component ROLE   export one component's elements (1-D)\n",
     kExportOpts, run_export},
    {"convert", "between .zt, .safetensors, .gguf, .npy, .npz, PyTorch, .onnx", kConvertUsage,
     kConvertOpts, run_convert},
    {"compress", "re-encode components with zstd", kCompressUsage, kRecodeOpts, run_compress},
    {"decompress", "re-encode components raw", kDecompressUsage, kDecompressOpts, run_decompress},
    {"merge", "several files into one", kMergeUsage, kMergeOpts, run_merge},
    {"rm", "a copy without some objects", kRmUsage, kRmOpts, run_rm},
    {"append", "add or replace objects in a v2 file",
     "Usage: zt append FILE.zt INPUT... [--compress[=LEVEL]] [--digest ALGO] [--threads N]\n"
     "\n"
     "Adds the objects of every INPUT (any readable format) to the zTensor v2\n"
     "file FILE (v2 spec section 2.5): new blobs, a new manifest and a new footer\n"
     "after its bytes, which are never changed. An object named like one of\n"
     "FILE's replaces it (the old bytes stay, unreferenced); a name given twice\n"
     "is refused. The new generation is written to a copy beside FILE and\n"
     "renamed over it, so a crash or an error leaves FILE as it was. Inputs are\n"
     "checked first (digests, content rules). 1.x files are refused (exit 4:\n"
     "zt merge rewrites them); an appended file is no longer canonical.\n"
     "\n"
     "Options:\n"
     "  --compress[=LEVEL]   zstd-compress the new objects\n"
     "  --digest ALGO        xxh3 (default), sha256 or none\n"
     "  --threads N          compression threads (default: all cores)\n",
     kAppendOpts, run_append},
    {"diff", "objects added, removed, changed",
     "Usage: zt diff A B [-q]\n"
     "\n"
     "Compares two files (any readable formats): file attributes, objects added\n"
     "(+), removed (-) and changed (~: format, shape, attributes, components,\n"
     "dtypes, decoded values with the first differing element). Encodings and\n"
     "digests are not compared. Exits 1 if anything differs, 0 if not.\n"
     "\n"
     "Options:\n"
     "  -q, --quiet   print nothing; the exit code tells\n",
     kDiffOpts, run_diff},
    {"demo-checkpoint",
     "write the demo's example checkpoint",
     "Usage: zt demo-checkpoint OUT.zt\n"
     "\n"
     "Writes a small deterministic checkpoint with one object of every kind:\n"
     "dense f32 (zstd) and bf16 tensors, an FP8 (f8_e4m3fn) tensor, a CSR\n"
     "matrix, a 4-bit quantized_group weight, an i64 vector, file and object\n"
     "attributes. Used by scripts/demo.sh and the tests.\n",
     {},
     run_demo_checkpoint},
};

void print_main_help() {
  std::printf(
      "zt %s: inspect, check and convert zTensor (.zt) files\n"
      "\n"
      "Usage: zt COMMAND [ARGS...]   (zt COMMAND --help for details)\n"
      "\n"
      "Commands:\n",
      version_text().c_str());
  for (const Command& c : kCommands)
    std::printf("  %-16s %.*s\n", std::string(c.name).c_str(), static_cast<int>(c.summary.size()),
                c.summary.data());
  std::printf("\n%.*s", static_cast<int>(kExitCodes.size()), kExitCodes.data());
  std::printf(
      "\nErrors go to stderr and name the file, the object and the rule broken, e.g.\n"
      "  zt: model.zt: object \"w\": component \"data\": xxh3 digest mismatch: ...\n"
      "A progress bar appears on stderr for work over 256 MiB when stderr is a terminal.\n");
}

}  // namespace

std::span<const Command> commands() {
  return kCommands;
}

int usage_error(std::string_view command, std::string_view message) {
  std::fprintf(stderr, "zt %.*s: %.*s\nTry 'zt %.*s --help'.\n", static_cast<int>(command.size()),
               command.data(), static_cast<int>(message.size()), message.data(),
               static_cast<int>(command.size()), command.data());
  return kUsage;
}

namespace {

// `zt --version`: this tool's version, the library's it is built with (the
// core is linked in, so the two are one), and what they read and write, the
// foreign formats taken from their descriptors.
void print_version() {
  const std::string version = version_text();
  std::printf("zt %s (libztensor %s)\n", version.c_str(), version.c_str());
  std::printf("reads:     zTensor 0.1, 1.0, 1.1, 1.2 and v2 (files, sharded models, http(s) URLs)");
  for (const foreign::ForeignFormat& f : foreign::foreign_formats()) {
    std::printf(", %.*s (", static_cast<int>(f.id.size()), f.id.data());
    for (size_t i = 0; i < f.extensions.size(); ++i)
      std::printf("%s*%.*s", i ? " " : "", static_cast<int>(f.extensions[i].size()),
                  f.extensions[i].data());
    std::printf(")");
  }
  std::printf(
      "\nwrites:    zTensor 1.2 (default) and v2; safetensors and gguf (convert); npy "
      "(export)\nencodings: raw, zstd, zt.zstd-seekable/1; digests xxh3, sha256\n");
}

}  // namespace

int run_zt(int argc, char** argv) {
  if (argc < 2) {
    print_main_help();
    return kUsage;
  }
  const std::string_view cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    print_main_help();
    return kOk;
  }
  if (cmd == "--version" || cmd == "-V") {
    print_version();
    return kOk;
  }
  for (const Command& c : kCommands) {
    if (c.name != cmd) continue;
    auto args =
        parse_args(std::span<char* const>(argv + 2, static_cast<size_t>(argc - 2)), c.options);
    if (!args) return usage_error(c.name, args.error().message);
    if (args->help) {
      std::printf("%.*s\n%.*s", static_cast<int>(c.usage.size()), c.usage.data(),
                  static_cast<int>(kExitCodes.size()), kExitCodes.data());
      return kOk;
    }
    const int code = c.run(*args);
    // What went to standard output must have arrived: `zt info > /dev/full`
    // exited 0. (A closed pipe ends the process by SIGPIPE, as in any tool.)
    errno = 0;
    const bool flushed = std::fflush(stdout) == 0;
    const int why = errno;  // of the flush; a failure before it left no reason here
    if ((!flushed || std::ferror(stdout)) && code != kIo) {
      std::fprintf(stderr, "zt %.*s: writing standard output failed%s%s\n",
                   static_cast<int>(c.name.size()), c.name.data(), why ? ": " : "",
                   why ? std::strerror(why) : "");
      return kIo;
    }
    return code;
  }
  std::fprintf(stderr, "zt: unknown command '%.*s'\nTry 'zt --help'.\n",
               static_cast<int>(cmd.size()), cmd.data());
  return kUsage;
}

}  // namespace zt::cli

