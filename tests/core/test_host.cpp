// The one host-name function the store, the run header and the Slurm target share.
#include <sys/utsname.h>

#include <string>

#include "core/host.hpp"
#include "tests/support/catch.hpp"

TEST_CASE("host: host_name is the kernel's node name and short_host_name cuts it at the first dot") {
    utsname u{};
    REQUIRE(::uname(&u) == 0);
    const std::string node = u.nodename;
    CHECK(ncclsweep::host_name() == node);
    const std::string short_name = ncclsweep::short_host_name();
    CHECK(short_name == node.substr(0, node.find('.')));
    CHECK(short_name.find('.') == std::string::npos);
    CHECK(!short_name.empty());
}
