// SPDX-License-Identifier: MIT
//
// fuzz_replay DIR... - feeds every regular file under each DIR (but dot
// files such as .keep), once, to the fuzz target's entry point
// (reader/fuzz/fuzz_reader.cc or fuzz_recipe.cc, LLVMFuzzerTestOneInput), built with the
// project's compiler instead of clang and libFuzzer.  In the sanitizer
// build (CT_SANITIZE) that is the reader's fuzz corpus and every kept
// regression input under gcc's ASan and UBSan, beside clang's in
// reader_fuzz_smoke.
//
// Prints one line per directory (how many inputs it replayed); exits 0
// when every input was replayed, 1 when a directory cannot be read, 2 on
// bad usage.  A finding of a sanitizer ends the process (halt_on_error),
// naming the input last begun on stderr.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size);

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fuzz_replay DIR...\n");
    return 2;
  }
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    std::vector<std::filesystem::path> inputs;
    for (const auto &e : std::filesystem::recursive_directory_iterator(argv[i], ec))
      if (e.is_regular_file() && !e.path().filename().string().starts_with("."))  // not .keep
        inputs.push_back(e.path());
    if (ec) {
      std::fprintf(stderr, "fuzz_replay: cannot read %s: %s\n", argv[i], ec.message().c_str());
      return 1;
    }
    for (const auto &p : inputs) {
      std::ifstream f(p, std::ios::binary);
      const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      if (!f.eof() && f.fail()) {
        std::fprintf(stderr, "fuzz_replay: cannot read %s\n", p.c_str());
        return 1;
      }
      std::fprintf(stderr, "fuzz_replay: %s (%zu bytes)\n", p.c_str(), bytes.size());
      LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    }
    std::printf("fuzz_replay: %zu inputs of %s replayed\n", inputs.size(), argv[i]);
  }
  return 0;
}
