// libFuzzer target: fuzzed bytes as a .zt file, rewritten in-process by
// every command of `zt` that writes a file (src/cli, linked as a library
// without main.cpp): convert (plain, --compress, --densify, to .safetensors
// and to .gguf with --densify), compress, decompress, rm, export, merge of the file with
// itself, and compress --in-place on a copy. Each output must be verified or
// refused (issue 24):
//   - the exit code is one of the documented 0..5, and nothing is thrown;
//   - the input is left byte for byte as it was;
//   - exit 0: the output exists and is valid: a .zt output opens and
//     verifies and holds the objects it should (all of the input's, those
//     rm kept), a .safetensors or .gguf output reads back (as `zt` reads it:
//     foreign::read_foreign) with the same names, an .npy output reads back
//     with the object's shape;
//   - any other exit: nothing at the output path, no temporary file left;
//   - a file that opens and verifies, holds no object the reader marks
//     unsupported and converts to under 4 MiB (decoded, narrow sparse
//     indices widened to u64) must convert: `zt convert IN OUT.zt` exits 0.
// The process has RLIMIT_FSIZE at 8 MiB with SIGXFSZ ignored (a full disk:
// larger outputs must fail with exit 3 and leave nothing). The commands'
// stdout goes to /dev/null and their stderr to a log that failure messages
// quote; sanitizer reports keep going to the real stderr. For speed, inputs
// that decode to more than 32 MiB are not rewritten, and densify and export
// are skipped when an object densifies to more than 2^20 values.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "commands.h"
#include "common.h"
#include "foreign/foreign.h"
#include "formats/quantized_group_layout.h"
#include "fuzz_support.h"
#include "read/reader.h"
#include "views/views.h"

// Findings F8-F11 (fuzz/README.md), fixed; each macro tolerated one while it
// was open and stays, at 0, to show what a regression would look like:
// F8: the reader accepted empty text (an object name, format, role or type
// "") that the writer refuses. F9: 0.1.0 / 1.0.x bool bytes other than 0
// and 1 were copied as they are, which 1.1 and later refuse. F10: a
// quantized_group lacking a parameter opened and verified, yet the writer
// refused to store it.
#ifndef ZT_FUZZ_TOLERATE_F8
#define ZT_FUZZ_TOLERATE_F8 0
#endif
#ifndef ZT_FUZZ_TOLERATE_F9
#define ZT_FUZZ_TOLERATE_F9 0
#endif
#ifndef ZT_FUZZ_TOLERATE_F10
#define ZT_FUZZ_TOLERATE_F10 0
#endif
// "A small file that verifies must convert": what the reader accepts, the
// writer must store (F8-F11 were found by it).
#ifndef ZT_FUZZ_REQUIRE_CONVERT
#define ZT_FUZZ_REQUIRE_CONVERT 1
#endif

// Sanitizer runtimes define it; without one (the GCC replay) it is null.
extern "C" __attribute__((weak)) void __sanitizer_set_report_fd(void* fd);

namespace {

using namespace zt::fuzz;
using zt::cli::Args;
using zt::cli::OptSpec;
using RunFn = int (*)(const Args&);

// The option specs of a command: the tool's own table (commands.cpp).
std::span<const OptSpec> specs_of(std::string_view name) {
  for (const zt::cli::Command& c : zt::cli::commands())
    if (c.name == name) return c.options;
  FUZZ_CHECK(false, "no command " + std::string(name));
  return {};
}

constexpr rlim_t kFileSizeLimit = rlim_t{8} << 20;
// Inputs that decode to more are not rewritten: every command decodes them
// whole, several times (check, copy), which only makes the run slow.
constexpr uint64_t kMaxDecoded = uint64_t{32} << 20;
// A file that verifies and converts to less (decoded, narrow sparse indices
// widened) must convert: its output stays far below the file-size limit.
constexpr uint64_t kMustConvertBelow = uint64_t{4} << 20;
// Densify and export are skipped when an object densifies to more values
// (they would only run into the file-size limit, slowly).
constexpr uint64_t kMaxDensifyValues = uint64_t{1} << 20;

const char* const kIn = "in.zt";
const char* const kCopy = "copy.zt";
const char* const kOutZt = "out.zt";
const char* const kOutSt = "out.safetensors";
const char* const kOutGguf = "out.gguf";
const char* const kOutNpy = "out.npy";

// ---- once per process --------------------------------------------------------

struct Process {
  std::string dir;       // in.zt, the copy, the outputs: nothing else
  std::string log_path;  // the commands' stderr (outside dir)
  int null_fd = -1;
  int log_fd = -1;
};

const Process& process() {
  static const Process proc = [] {
    Process q;
    // A full disk: writes past 8 MiB fail with EFBIG instead of killing us.
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{};
    FUZZ_CHECK(::getrlimit(RLIMIT_FSIZE, &lim) == 0, std::string("getrlimit: ") + std::strerror(errno));
    if (lim.rlim_cur > kFileSizeLimit) lim.rlim_cur = kFileSizeLimit;
    FUZZ_CHECK(::setrlimit(RLIMIT_FSIZE, &lim) == 0, std::string("setrlimit: ") + std::strerror(errno));

    q.dir = scratch_dir() + "/cli";
    ::mkdir(q.dir.c_str(), 0700);
    q.log_path = scratch_dir() + "/cli-stderr.log";
    q.null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    FUZZ_CHECK(q.null_fd >= 0, std::string("/dev/null: ") + std::strerror(errno));
    q.log_fd = ::open(q.log_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    FUZZ_CHECK(q.log_fd >= 0, q.log_path + ": " + std::strerror(errno));

    // Sanitizer reports go to a copy of the real stderr, so that a crash
    // inside a command (while fd 2 is the log) is still seen.
    void (*set_report_fd)(void*) = &__sanitizer_set_report_fd;
    if (set_report_fd != nullptr) {
      const int fd = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
      if (fd >= 0) set_report_fd(reinterpret_cast<void*>(static_cast<intptr_t>(fd)));
    }
    return q;
  }();
  return proc;
}

// While alive: stdout to /dev/null, stderr to the (emptied) log.
class Quiet {
 public:
  Quiet() : p_(process()) {
    std::fflush(stdout);
    std::fflush(stderr);
    FUZZ_CHECK(::ftruncate(p_.log_fd, 0) == 0, p_.log_path + ": " + std::strerror(errno));
    out_ = ::dup(STDOUT_FILENO);
    err_ = ::dup(STDERR_FILENO);
    ::dup2(p_.null_fd, STDOUT_FILENO);
    ::dup2(p_.log_fd, STDERR_FILENO);
  }
  ~Quiet() {
    std::fflush(stdout);
    std::fflush(stderr);
    if (out_ >= 0) {
      ::dup2(out_, STDOUT_FILENO);
      ::close(out_);
    }
    if (err_ >= 0) {
      ::dup2(err_, STDERR_FILENO);
      ::close(err_);
    }
  }
  Quiet(const Quiet&) = delete;
  Quiet& operator=(const Quiet&) = delete;

 private:
  const Process& p_;
  int out_ = -1, err_ = -1;
};

// ---- messages ----------------------------------------------------------------

std::string clip(const std::string& s, size_t n = 2000) {
  return s.size() <= n ? s : s.substr(0, n) + "...";
}

std::string join(const std::vector<std::string>& names) {
  std::string s = "[";
  for (size_t i = 0; i < names.size() && i < 16; ++i) s += (i ? ", \"" : "\"") + clip(names[i], 64) + "\"";
  if (names.size() > 16) s += ", ... (" + std::to_string(names.size()) + " in all)";
  return s + "]";
}

std::string shape_str(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// ---- what the input is ---------------------------------------------------------

struct Facts {
  bool opens = false;        // zt::Reader::open_file accepts it
  bool verifies = false;     // and verify() holds (checked only when not too large)
  bool unsupported = false;  // an object the reader lists but cannot read
  uint64_t decoded = 0;      // decoded bytes of every component (counting stops past kMaxDecoded)
  uint64_t copied = 0;       // what convert writes of them: narrow sparse indices widened to u64
  uint64_t max_values = 0;   // the largest decoded_value_count of an object
  bool empty_text = false;   // an empty object name, format, component role or type (F8)
  bool legacy_bool = false;  // a 0.1.0 / 1.0.x bool byte other than 0 and 1 (F9)
  bool quant_unparameterised = false;  // a quantized_group lacking bits, group_size or packing (F10)
  std::vector<std::pair<std::string, std::vector<uint64_t>>> objects;  // name, shape; in file order
};

// Whether convert widens the component to u64 (cmd_rewrite.cpp,
// narrow_sparse_index: sparse indices of files before 1.2.0).
bool widened(const zt::Object& o, const zt::Component& c) {
  const bool sparse = o.format == "sparse_csr" || o.format == "sparse_coo";
  const bool is_index = c.role == "indices" || c.role == "indptr" || c.role == "coords";
  return sparse && is_index && c.dtype != zt::DType::u64 && zt::dtype_is_integer(c.dtype);
}

// Decoded bytes of every component, a window at a time, stopping once past
// kMaxDecoded (so that a zstd bomb costs that much, not what it claims).
// Components that cannot be decoded count for what they gave.
// Also finds legacy bool bytes other than 0 and 1.
void count_decoded(const zt::Reader& r, Facts& f) {
  const std::vector<zt::Object>& objects = r.manifest().objects;
  const bool legacy = r.manifest().generation != zt::Generation::v1;
  for (size_t i = 0; i < objects.size() && f.decoded <= kMaxDecoded; ++i) {
    for (size_t k = 0; k < objects[i].components.size() && f.decoded <= kMaxDecoded; ++k) {
      const zt::Component& c = objects[i].components[k];
      const uint64_t factor = widened(objects[i], c) ? 8 / std::max(1u, c.width()) : 1;
      const bool bools = legacy && c.dtype == zt::DType::boolean;
      auto w = r.windows(i, k);
      if (!w) continue;
      while (f.decoded <= kMaxDecoded) {
        auto piece = (*w)->next();
        if (!piece || piece->empty()) break;
        f.decoded += piece->size();
        f.copied += piece->size() * factor;
        if (bools && std::any_of(piece->begin(), piece->end(), [](uint8_t b) { return b > 1; }))
          f.legacy_bool = true;
      }
    }
  }
}

Facts analyse(const std::string& path) {
  Facts f;
  auto r = zt::Reader::open_file(path);
  if (!r) return f;
  f.opens = true;
  const zt::Reader& rd = **r;
  const std::vector<zt::Object>& objects = rd.manifest().objects;
  for (size_t i = 0; i < objects.size(); ++i) {
    const zt::Object& o = objects[i];
    f.objects.emplace_back(o.name, o.shape);
    if (!o.unsupported.empty()) f.unsupported = true;
    if (o.name.empty() || o.format.empty()) f.empty_text = true;
    if (o.format == "quantized_group") {
      const auto q = zt::quant_layout(o);
      if (!q && q.error().status == zt::Status::not_found) f.quant_unparameterised = true;
    }
    for (const zt::Component& c : o.components)
      if (c.role.empty() || (c.type && c.type->empty())) f.empty_text = true;
    if (const auto n = zt::decoded_value_count(rd, i)) f.max_values = std::max(f.max_values, *n);
  }
  count_decoded(rd, f);
  if (f.decoded <= kMaxDecoded) f.verifies = rd.verify().ok();
  return f;
}

// ---- running one command ---------------------------------------------------------

struct Ran {
  int code = 0;
  std::string log;  // what the command wrote to stderr
};

// Parses `words` with the command's specs as main.cpp does, runs the command
// with its output silenced, and catches what main() catches.
Ran run_command(const std::string& what, RunFn run, std::span<const OptSpec> specs,
                std::vector<std::string> words) {
  const Process& p = process();
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  auto args = zt::cli::parse_args(std::span<char* const>(argv.data(), argv.size()), specs);
  FUZZ_CHECK(args.ok(), what + ": the harness's command line does not parse: " + args.error().message);
  FUZZ_CHECK(!args->help, what + ": the harness's command line asks for --help");
  Ran r;
  std::string internal;
  {
    Quiet quiet;
    try {
      r.code = run(*args);
    } catch (const std::bad_alloc&) {
      r.code = zt::cli::kIo;  // main(): "out of memory", exit 3
    } catch (const std::exception& e) {
      r.code = zt::cli::kIo;  // main(): "internal error", exit 3
      internal = e.what();
    }
  }
  std::vector<uint8_t> logged;
  if (read_file(p.log_path, logged)) r.log.assign(logged.begin(), logged.end());
  const std::string told = r.log.empty() ? "" : "\n  zt said: " + clip(r.log);
  FUZZ_CHECK(internal.empty(), what + ": internal error (an exception escaped the command): " + internal + told);
  FUZZ_CHECK(r.code >= zt::cli::kOk && r.code <= zt::cli::kRefused,
             what + ": exit code " + std::to_string(r.code) + " is not one of 0..5" + told);
  return r;
}

enum class Output { ztensor, foreign, npy };  // foreign: read back by foreign::read_foreign

struct Step {
  std::string what;  // the command line, for messages
  RunFn run;
  std::span<const OptSpec> specs;
  std::vector<std::string> words;
  const char* output;  // its file name in the directory
  Output kind;
  // A .zt or .safetensors output must hold exactly these objects (sorted).
  const std::vector<std::string>* names;
  // An .npy output must have this shape (nullptr: not checked).
  const std::vector<uint64_t>* shape;
};

struct Context {
  const Process& p;
  const std::vector<uint8_t>& input;
  const Facts& facts;
};

std::string path_in(const Context& c, const char* name) {
  return c.p.dir + "/" + name;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

std::string said(const Ran& r) {
  return r.log.empty() ? "" : "\n  zt said: " + clip(r.log);
}

void check_input_intact(const Context& c, const std::string& what, const Ran& r) {
  std::vector<uint8_t> now;
  FUZZ_CHECK(read_file(path_in(c, kIn), now), what + ": the input is gone (exit " + std::to_string(r.code) + ")" + said(r));
  FUZZ_CHECK(now == c.input, what + ": the input changed (exit " + std::to_string(r.code) + ", " +
                                 std::to_string(now.size()) + " bytes now, " +
                                 std::to_string(c.input.size()) + " before)" + said(r));
}

// The directory holds `allowed` and nothing else: no temporary file.
void check_directory(const Context& c, const std::string& what, const Ran& r,
                     const std::set<std::string>& allowed) {
  for (const std::string& n : list_dir(c.p.dir))
    FUZZ_CHECK(allowed.count(n) != 0, what + ": exit " + std::to_string(r.code) + " left \"" + n +
                                          "\" in the directory" + said(r));
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// A .zt file the command says it wrote: opens, verifies, holds `names`.
void check_zt(const std::string& what, const std::string& path, const std::vector<std::string>* names,
              const Ran& r) {
  auto rd = zt::Reader::open_file(path);
  FUZZ_CHECK(rd.ok(), what + ": exit 0 but the output does not open: " + rd.error().message + said(r));
  const auto v = (*rd)->verify();
  FUZZ_CHECK(v.ok(), what + ": exit 0 but the output does not verify: " + v.error().message + said(r));
  if (!names) return;
  std::vector<std::string> got;
  for (const zt::Object& o : (*rd)->manifest().objects) got.push_back(o.name);
  got = sorted(std::move(got));
  FUZZ_CHECK(got == *names, what + ": the output holds " + join(got) + ", expected " + join(*names) + said(r));
}

void check_output(const Step& s, const Facts& facts, const std::string& path, const Ran& r) {
  switch (s.kind) {
    case Output::ztensor:
      check_zt(s.what, path, s.names, r);
      break;
    case Output::foreign: {
      auto f = zt::foreign::read_foreign(path);
      if (!f && ((ZT_FUZZ_TOLERATE_F8 && facts.empty_text) || (ZT_FUZZ_TOLERATE_F9 && facts.legacy_bool)))
        break;
      FUZZ_CHECK(f.ok(), s.what + ": exit 0 but the output does not read back: " + f.error().message + said(r));
      if (!s.names) break;
      std::vector<std::string> got;
      for (const auto& o : f->objects) got.push_back(o.name);
      got = sorted(std::move(got));
      FUZZ_CHECK(got == *s.names, s.what + ": the output holds " + join(got) + ", expected " +
                                      join(*s.names) + said(r));
      break;
    }
    case Output::npy: {
      auto f = zt::foreign::read_foreign(path);
      if (!f && ZT_FUZZ_TOLERATE_F9 && facts.legacy_bool) break;
      FUZZ_CHECK(f.ok(), s.what + ": exit 0 but the output does not read back: " + f.error().message + said(r));
      FUZZ_CHECK(f->objects.size() == 1, s.what + ": the .npy output holds " +
                                             std::to_string(f->objects.size()) + " arrays" + said(r));
      if (s.shape)
        FUZZ_CHECK(f->objects[0].shape == *s.shape, s.what + ": the .npy output has shape " +
                                                        shape_str(f->objects[0].shape) + ", the object " +
                                                        shape_str(*s.shape) + said(r));
      break;
    }
  }
}

// Runs one command that writes s.output, checks every invariant, removes
// the output.
Ran rewrite(const Context& c, const Step& s) {
  const std::string out = path_in(c, s.output);
  ::unlink(out.c_str());
  const Ran r = run_command(s.what, s.run, s.specs, s.words);
  check_input_intact(c, s.what, r);
  if (r.code == zt::cli::kOk) {
    FUZZ_CHECK(c.facts.opens, s.what + ": exit 0 although the input does not open with zt::Reader" + said(r));
    FUZZ_CHECK(exists(out), s.what + ": exit 0 but nothing at the output path" + said(r));
    check_output(s, c.facts, out, r);
    check_directory(c, s.what, r, {kIn, s.output});
  } else {
    FUZZ_CHECK(!exists(out), s.what + ": exit " + std::to_string(r.code) +
                                 " but a file at the output path" + said(r));
    check_directory(c, s.what, r, {kIn});
  }
  ::unlink(out.c_str());
  return r;
}

// compress --in-place on a copy of the input: the copy is either as it
// was, or the command succeeded and it verifies with every object.
void rewrite_in_place(const Context& c, const std::vector<std::string>& names) {
  const std::string what = "compress COPY --in-place";
  const std::string copy = path_in(c, kCopy);
  FUZZ_CHECK(write_file(copy, c.input.data(), c.input.size()), "cannot write " + copy);
  const Ran r = run_command(what, zt::cli::run_compress, specs_of("compress"), {copy, "--in-place"});
  check_input_intact(c, what, r);
  std::vector<uint8_t> now;
  FUZZ_CHECK(read_file(copy, now), what + ": the file is gone (exit " + std::to_string(r.code) + ")" + said(r));
  if (r.code == zt::cli::kOk) {
    FUZZ_CHECK(c.facts.opens, what + ": exit 0 although the input does not open with zt::Reader" + said(r));
    check_zt(what, copy, &names, r);
  } else {
    FUZZ_CHECK(now == c.input, what + ": exit " + std::to_string(r.code) + " but the file changed" + said(r));
  }
  check_directory(c, what, r, {kIn, kCopy});
  ::unlink(copy.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zt::cli;
  const Process& p = process();
  remove_all_in(p.dir);
  std::vector<uint8_t> input;
  if (size) input.assign(data, data + size);
  const std::string in = p.dir + "/" + kIn;
  FUZZ_CHECK(write_file(in, input.data(), input.size()), "cannot write " + in);

  const Facts facts = analyse(in);
  if (facts.opens && facts.decoded > kMaxDecoded) {
    remove_all_in(p.dir);
    return 0;
  }
  const Context c{p, input, facts};
  const bool densify = !facts.opens || facts.max_values <= kMaxDensifyValues;

  std::vector<std::string> all;
  for (const auto& o : facts.objects) all.push_back(o.first);
  all = sorted(std::move(all));
  // rm and export name the first object; argv carries it up to a NUL byte
  // (the reader refuses names with one, but the harness does not rely on it).
  const std::string name = facts.opens && !facts.objects.empty() ? facts.objects[0].first : "x";
  const std::string name_arg(name.c_str());
  std::vector<std::string> kept;
  const std::vector<uint64_t>* shape = nullptr;
  for (const auto& o : facts.objects) {
    if (o.first != name_arg) kept.push_back(o.first);
    else if (!shape) shape = &o.second;
  }
  kept = sorted(std::move(kept));

  const std::string out_zt = p.dir + "/" + kOutZt, out_st = p.dir + "/" + kOutSt,
                    out_gguf = p.dir + "/" + kOutGguf, out_npy = p.dir + "/" + kOutNpy;

  const Ran plain = rewrite(c, {"convert IN OUT.zt", run_convert, specs_of("convert"), {in, out_zt}, kOutZt,
                                Output::ztensor, &all, nullptr});
  const bool tolerated = (ZT_FUZZ_TOLERATE_F8 && facts.empty_text) || (ZT_FUZZ_TOLERATE_F9 && facts.legacy_bool) ||
                         (ZT_FUZZ_TOLERATE_F10 && facts.quant_unparameterised);
  if (ZT_FUZZ_REQUIRE_CONVERT && facts.opens && facts.verifies && !facts.unsupported &&
      facts.copied < kMustConvertBelow && !tolerated)
    FUZZ_CHECK(plain.code == kOk, "convert IN OUT.zt: the input opens, verifies and decodes to " +
                                      std::to_string(facts.copied) + " bytes, yet convert exited " +
                                      std::to_string(plain.code) + said(plain));
  rewrite(c, {"convert IN OUT.zt --compress", run_convert, specs_of("convert"), {in, out_zt, "--compress"},
              kOutZt, Output::ztensor, &all, nullptr});
  if (densify) {
    rewrite(c, {"convert IN OUT.zt --densify", run_convert, specs_of("convert"), {in, out_zt, "--densify"},
                kOutZt, Output::ztensor, &all, nullptr});
    rewrite(c, {"convert IN OUT.safetensors --densify",
                run_convert,
                specs_of("convert"),
                {in, out_st, "--densify"},
                kOutSt,
                Output::foreign,
                &all,
                nullptr});
    rewrite(c, {"convert IN OUT.gguf --densify",
                run_convert,
                specs_of("convert"),
                {in, out_gguf, "--densify"},
                kOutGguf,
                Output::foreign,
                &all,
                nullptr});
  }
  rewrite(c, {"compress IN -o OUT.zt", run_compress, specs_of("compress"), {in, "-o", out_zt}, kOutZt, Output::ztensor,
              &all, nullptr});
  rewrite(c, {"decompress IN -o OUT.zt", run_decompress, specs_of("decompress"), {in, "-o", out_zt}, kOutZt,
              Output::ztensor, &all, nullptr});
  // "--" first: a name that starts with '-' stays a name.
  rewrite(c, {"rm IN NAME -o OUT.zt", run_rm, specs_of("rm"), {in, "-o", out_zt, "--", name_arg}, kOutZt,
              Output::ztensor, &kept, nullptr});
  if (densify)
    rewrite(c, {"export IN NAME -o OUT.npy", run_export, specs_of("export"), {in, "-o", out_npy, "--", name_arg},
                kOutNpy, Output::npy, nullptr, shape});
  // Every name clashes: refused unless the file holds no object.
  rewrite(c, {"merge IN IN -o OUT.zt", run_merge, specs_of("merge"), {in, in, "-o", out_zt}, kOutZt, Output::ztensor,
              &all, nullptr});
  rewrite_in_place(c, all);

  remove_all_in(p.dir);
  return 0;
}
