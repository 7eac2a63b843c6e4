// replay_recording [--from-first-line] FILE.rec: writes a recorded output (see
// tests/fixtures/recorded/README.md) to stdout/stderr with its original timing, then ends the
// way the recorded program ended (its exit status, or its signal).
// --from-first-line drops the silence before the first line (e.g. 3 s of `import torch`); the
// time between lines is kept.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace {

bool write_all(int fd, const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    bool from_first_line = false;
    int arg = 1;
    if (arg < argc && std::string(argv[arg]) == "--from-first-line") {
        from_first_line = true;
        ++arg;
    }
    if (arg + 1 != argc) {
        std::fprintf(stderr, "usage: replay_recording [--from-first-line] FILE.rec\n");
        return 2;
    }
    std::ifstream in(argv[arg], std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "replay_recording: cannot open %s\n", argv[arg]);
        return 2;
    }
    const auto start = std::chrono::steady_clock::now();
    double offset = -1;
    std::string record;
    while (std::getline(in, record)) {
        const auto tab1 = record.find('\t');
        const auto tab2 = tab1 == std::string::npos ? std::string::npos : record.find('\t', tab1 + 1);
        if (tab2 == std::string::npos) {
            std::fprintf(stderr, "replay_recording: %s: malformed record '%s'\n", argv[arg], record.c_str());
            return 2;
        }
        const double at = std::strtod(record.c_str(), nullptr);
        if (offset < 0) offset = from_first_line ? at : 0;
        std::this_thread::sleep_until(start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                  std::chrono::duration<double>(at - offset)));
        const std::string kind = record.substr(tab1 + 1, tab2 - tab1 - 1);
        const std::string text = record.substr(tab2 + 1);
        if (kind == "exit") return std::atoi(text.c_str());
        if (kind == "signal") {
            const int sig = std::atoi(text.c_str());
            ::signal(sig, SIG_DFL);
            ::raise(sig);
            return 128 + sig;
        }
        if (!write_all(kind == "err" ? STDERR_FILENO : STDOUT_FILENO, text + "\n")) return 141;
    }
    return 0;
}
