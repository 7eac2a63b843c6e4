#pragma once
// Ctrl-C / SIGTERM: raise a flag the sweep loop checks, so the running group is killed and the
// sweep is closed cleanly instead of the process dying mid-write.
#include <atomic>

namespace ncclsweep::cli {

/// Installs SIGINT/SIGTERM handlers (once) and returns the flag they raise.
const std::atomic<bool>& install_interrupt_handler();

/// The flag install_interrupt_handler() raises, without installing the handler yet.
const std::atomic<bool>& interrupt_flag();

}  // namespace ncclsweep::cli
