#include "remote/target_factory.hpp"

#include <fmt/format.h>

#include "remote/local_target.hpp"
#include "remote/ssh_target.hpp"
#include "remote/target_url.hpp"

namespace ncclsweep::remote {

Result<std::unique_ptr<Target>> make_target(const TargetSpec& spec, const TargetOverrides& overrides) {
    const std::string url_text = overrides.url.value_or(spec.url);
    auto url = parse_target_url(url_text);
    if (!url) {
        if (overrides.url || spec.mark.line == 0) return url.error();
        return Error::bad_input(fmt::format("{}: {}", spec.mark.to_string(), url.error().message));
    }
    if (url->kind == TargetUrl::Kind::local) {
        LocalOptions options;
        options.workdir_root = spec.workdir;
        return std::unique_ptr<Target>(std::make_unique<LocalTarget>(options));
    }
    SshOptions options;
    options.workdir_root = spec.workdir;
    options.accept_new_host_key = spec.accept_new_host_key || overrides.accept_new_host_key;
    if (overrides.known_hosts) options.known_hosts = *overrides.known_hosts;
    options.identity_file = overrides.identity_file ? overrides.identity_file : spec.identity_file;
    auto target = SshTarget::connect(*url, options);
    if (!target) return target.error();
    return std::unique_ptr<Target>(std::move(*target));
}

}  // namespace ncclsweep::remote
