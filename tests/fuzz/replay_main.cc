// A stand-in for libFuzzer's driver where there is none (GCC builds, plain sanitizer builds): runs
// LLVMFuzzerTestOneInput on every file named on the command line (directories are walked), then
// on a bounded number of deterministic pseudo-random mutations of them. CTest runs it on each
// target's seed corpus, so `make test` exercises every fuzz target in a few seconds; a crash file
// from tests/fuzz/crashes/ replays the same way.
//
//   <target>_replay [--mutations=N] [--seed=S] [--max-len=L] FILE_OR_DIR...
//
// The mutations (bit flips, byte overwrites with interesting values, insertions, deletions,
// truncation, splicing two inputs) are a crude subset of libFuzzer's: they only reach what lies
// near the seeds, which is the point of a regression run, not of fuzzing.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);
// Sanitizer runtimes call this before they exit on an error; absent without sanitizers.
extern "C" __attribute__((weak)) void __sanitizer_set_death_callback(void (*callback)(void));

namespace {

using Bytes = std::vector<uint8_t>;

struct Rng {
  uint64_t state;
  uint64_t next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1DULL;
  }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }
};

constexpr uint8_t kInteresting[] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x7F, 0x80, 0xFF, 0xFE,
                                    0x40, 0x21, 0x12, 0xA4, 0x42, 0x20, 0x14, 0x13, 0x08};

void mutate(Bytes& b, const std::vector<Bytes>& all, Rng& rng, size_t max_len) {
  const int rounds = 1 + static_cast<int>(rng.below(4));
  for (int r = 0; r < rounds; ++r) {
    switch (rng.below(8)) {
      case 0:  // flip a bit
        if (!b.empty()) b[rng.below(b.size())] ^= static_cast<uint8_t>(1u << rng.below(8));
        break;
      case 1:  // overwrite a byte with an interesting value
        if (!b.empty()) b[rng.below(b.size())] = kInteresting[rng.below(sizeof kInteresting)];
        break;
      case 2:  // random byte
        if (!b.empty()) b[rng.below(b.size())] = static_cast<uint8_t>(rng.next());
        break;
      case 3: {  // insert a few bytes
        const size_t n = 1 + rng.below(8);
        const size_t at = rng.below(b.size() + 1);
        for (size_t i = 0; i < n; ++i) {
          b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), static_cast<uint8_t>(rng.next()));
        }
        break;
      }
      case 4: {  // erase a range
        if (b.empty()) break;
        const size_t at = rng.below(b.size());
        const size_t n = 1 + rng.below(std::min<size_t>(16, b.size() - at));
        b.erase(b.begin() + static_cast<std::ptrdiff_t>(at),
                b.begin() + static_cast<std::ptrdiff_t>(at + n));
        break;
      }
      case 5:  // truncate
        b.resize(rng.below(b.size() + 1));
        break;
      case 6: {  // splice: our prefix, another input's suffix
        const Bytes& other = all[rng.below(all.size())];
        const size_t keep = rng.below(b.size() + 1);
        const size_t from = rng.below(other.size() + 1);
        b.resize(keep);
        b.insert(b.end(), other.begin() + static_cast<std::ptrdiff_t>(from), other.end());
        break;
      }
      default: {  // a 16-bit big-endian field set to an interesting length/type
        if (b.size() < 2) break;
        const size_t at = rng.below(b.size() - 1);
        const uint16_t v = static_cast<uint16_t>(
            rng.below(2) ? rng.below(64) : (rng.below(2) ? 0xFFFF - rng.below(8) : rng.next()));
        b[at] = static_cast<uint8_t>(v >> 8);
        b[at + 1] = static_cast<uint8_t>(v);
        break;
      }
    }
  }
  if (b.size() > max_len) b.resize(max_len);
}

bool readFile(const std::filesystem::path& path, Bytes& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

// The input being run, written to ./replay-crash-input when the process dies on it, since a
// mutation exists nowhere else.
const Bytes* g_current = nullptr;
bool g_current_is_mutation = false;

void saveCurrent() {
  if (g_current == nullptr || !g_current_is_mutation) return;
  if (FILE* f = std::fopen("replay-crash-input", "wb")) {
    std::fwrite(g_current->data(), 1, g_current->size(), f);
    std::fclose(f);
    std::fprintf(stderr, "replay: input written to ./replay-crash-input (%zu bytes)\n",
                 g_current->size());
  }
}

extern "C" void onFatalSignal(int sig) {
  saveCurrent();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void run(const Bytes& b) {
  g_current = &b;
  // A copy in a buffer of exactly the input's size, so ASan sees reads one past the end.
  std::unique_ptr<uint8_t[]> copy(new uint8_t[b.size() == 0 ? 1 : b.size()]);
  if (!b.empty()) std::memcpy(copy.get(), b.data(), b.size());
  LLVMFuzzerTestOneInput(copy.get(), b.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  // A failed FUZZ_CHECK or assert() aborts, which no sanitizer intercepts by default; the other
  // fatal signals are left to the sanitizer's own handlers when there is one.
  std::signal(SIGABRT, onFatalSignal);
  if (__sanitizer_set_death_callback) {
    __sanitizer_set_death_callback(saveCurrent);
  } else {
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, onFatalSignal);
  }
  size_t mutations = 0;
  uint64_t seed = 1;
  size_t max_len = 4096;
  std::vector<std::filesystem::path> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--mutations=", 0) == 0) {
      mutations = std::strtoull(arg.c_str() + 12, nullptr, 10);
    } else if (arg.rfind("--seed=", 0) == 0) {
      seed = std::strtoull(arg.c_str() + 7, nullptr, 10);
    } else if (arg.rfind("--max-len=", 0) == 0) {
      max_len = std::strtoull(arg.c_str() + 10, nullptr, 10);
    } else {
      paths.emplace_back(arg);
    }
  }

  std::vector<std::filesystem::path> files;
  for (const auto& p : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else if (std::filesystem::exists(p, ec)) {
      files.push_back(p);
    } else {
      std::fprintf(stderr, "replay: no such file or directory: %s\n", p.c_str());
      return 2;
    }
  }
  std::sort(files.begin(), files.end());  // deterministic order across file systems

  const auto start = std::chrono::steady_clock::now();
  std::vector<Bytes> inputs;
  for (const auto& f : files) {
    Bytes b;
    if (!readFile(f, b)) {
      std::fprintf(stderr, "replay: cannot read %s\n", f.c_str());
      return 2;
    }
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", f.c_str(), b.size());
    run(b);
    inputs.push_back(std::move(b));
  }
  if (inputs.empty()) inputs.emplace_back();  // mutate from nothing

  Rng rng{seed * 0x9E3779B97F4A7C15ULL + 1};
  Bytes b;
  g_current_is_mutation = true;
  for (size_t i = 0; i < mutations; ++i) {
    b = inputs[rng.below(inputs.size())];
    mutate(b, inputs, rng, max_len);
    run(b);
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  std::fprintf(stderr, "replay: %zu files, %zu mutations, %lld ms, no crash\n", files.size(),
               mutations, static_cast<long long>(ms));
  return 0;
}
