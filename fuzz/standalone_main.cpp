// A minimal stand-in for libFuzzer so fuzz targets also build with GCC and run as a smoke test:
// each seed file is run as is, then `--iterations` random mutations (byte flips, truncations,
// insertions, splices) of the seeds. Deterministic (fixed seed) so a failure reproduces.
// An input that runs longer than --timeout seconds (default 20) is a hang: it is written to
// fuzz-hang.bin in the working directory and the driver exits 70, so a hang fails the smoke test
// at once instead of running until CI's budget is spent (yaml-cpp once looped on a mutation).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// The input being run, for the alarm handler (which may only make async-signal-safe calls).
const char* volatile g_data = nullptr;
volatile size_t g_size = 0;

void on_alarm(int) {
  static const char msg[] = "fuzz: an input ran past --timeout: written to fuzz-hang.bin\n";
  (void)!write(2, msg, sizeof msg - 1);
  const int fd = open("fuzz-hang.bin", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    (void)!write(fd, g_data, g_size);
    close(fd);
  }
  _exit(70);
}

unsigned g_timeout = 20;

void run_one(const std::string& s) {
  g_data = s.data();
  g_size = s.size();
  alarm(g_timeout);
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  alarm(0);
}

}  // namespace

int main(int argc, char** argv) {
  long iterations = 1000;
  std::vector<std::string> seeds;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--iterations=", 0) == 0) {
      iterations = std::atol(a.c_str() + 13);
      continue;
    }
    if (a.rfind("--timeout=", 0) == 0) {
      g_timeout = unsigned(std::max(1L, std::atol(a.c_str() + 10)));
      continue;
    }
    std::ifstream f(a, std::ios::binary);
    if (!f) {
      std::fprintf(stderr, "fuzz: cannot read seed %s\n", a.c_str());
      return 1;
    }
    std::ostringstream ss;
    ss << f.rdbuf();
    seeds.push_back(ss.str());
  }
  if (seeds.empty()) seeds.push_back("");
  signal(SIGALRM, on_alarm);
  for (auto& s : seeds) run_one(s);
  std::mt19937_64 rng(12345);
  for (long it = 0; it < iterations; ++it) {
    std::string s = seeds[rng() % seeds.size()];
    int n_mut = 1 + rng() % 8;
    for (int m = 0; m < n_mut; ++m) {
      switch (rng() % 5) {
        case 0:  // flip a byte
          if (!s.empty()) s[rng() % s.size()] ^= char(1 + rng() % 255);
          break;
        case 1:  // truncate
          if (!s.empty()) s.resize(rng() % s.size());
          break;
        case 2:  // insert random bytes
          s.insert(s.empty() ? 0 : rng() % s.size(), std::string(1 + rng() % 8, char(rng())));
          break;
        case 3:  // set an interesting value (0xff.., 0, small ints) at a random place
          if (s.size() >= 8) {
            size_t p = rng() % (s.size() - 7);
            uint64_t v = (rng() % 2) ? ~0ull : rng() % 64;
            for (int b = 0; b < 8; ++b) s[p + b] = char(v >> (8 * b));
          }
          break;
        case 4:  // splice with another seed
          if (!seeds.empty()) {
            const std::string& o = seeds[rng() % seeds.size()];
            if (!o.empty() && !s.empty())
              s = s.substr(0, rng() % s.size()) + o.substr(rng() % o.size());
          }
          break;
      }
    }
    run_one(s);
  }
  std::printf("fuzz smoke: %zu seeds, %ld mutations, no crash\n", seeds.size(), iterations);
  return 0;
}
