#include "core/host.hpp"

#include <unistd.h>

namespace ncclsweep {

std::string host_name() {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) return {};
    return name;
}

std::string short_host_name() {
    const std::string host = host_name();
    return host.substr(0, host.find('.'));
}

}  // namespace ncclsweep
