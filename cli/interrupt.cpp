#include "cli/interrupt.hpp"

#include <csignal>

namespace ncclsweep::cli {
namespace {
std::atomic<bool> g_interrupted{false};
extern "C" void ncclsweep_on_interrupt(int) {
    g_interrupted = true;
}
}  // namespace

const std::atomic<bool>& interrupt_flag() {
    return g_interrupted;
}

const std::atomic<bool>& install_interrupt_handler() {
    struct sigaction action {};
    action.sa_handler = ncclsweep_on_interrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    return g_interrupted;
}

}  // namespace ncclsweep::cli
