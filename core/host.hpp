#pragma once
// This machine's host name, one function for every part that records or compares it.
#include <string>

namespace ncclsweep {

/// gethostname(2) as the kernel gives it ("" when it cannot be read).
[[nodiscard]] std::string host_name();
/// The same up to the first '.', as Slurm names its nodes ("" when it cannot be read).
[[nodiscard]] std::string short_host_name();

}  // namespace ncclsweep
