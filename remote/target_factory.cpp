#include "remote/target_factory.hpp"

#include <fmt/format.h>

#include "remote/local_target.hpp"
#include "remote/pool_target.hpp"
#include "remote/slurm_target.hpp"
#include "remote/ssh_target.hpp"
#include "remote/target_url.hpp"

namespace ncclsweep::remote {

namespace {

Result<std::unique_ptr<Target>> connect_ssh(const TargetUrl& url, const TargetSpec& spec,
                                            const TargetOverrides& overrides) {
    SshOptions options;
    options.workdir_root = spec.workdir;
    options.accept_new_host_key = spec.accept_new_host_key || overrides.accept_new_host_key;
    if (overrides.known_hosts) options.known_hosts = *overrides.known_hosts;
    options.identity_file = overrides.identity_file ? overrides.identity_file : spec.identity_file;
    auto target = SshTarget::connect(url, options);
    if (!target) return target.error();
    return std::unique_ptr<Target>(std::move(*target));
}

}  // namespace

Result<std::unique_ptr<Target>> make_target(const TargetSpec& spec, const TargetOverrides& overrides) {
    if (!spec.hosts.empty() && !overrides.url) {
        std::vector<std::unique_ptr<Target>> hosts;
        for (const auto& text : spec.hosts) {
            auto url = parse_target_url(text);
            if (!url)
                return Error::bad_input(fmt::format("{}: {}", spec.mark.to_string(), url.error().message));
            auto host = connect_ssh(*url, spec, overrides);
            if (!host) return host.error();
            hosts.push_back(std::move(*host));
        }
        return std::unique_ptr<Target>(std::make_unique<PoolTarget>(std::move(hosts)));
    }
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
    if (url->kind == TargetUrl::Kind::slurm) {
        LocalOptions login_options;
        login_options.workdir_root = spec.workdir;
        auto login = std::make_unique<LocalTarget>(login_options);
        auto commands = login_node_commands(*login);
        SlurmOptions options;
        options.partition = url->host;
        options.spec = spec.slurm;
        options.stop = overrides.stop;
        options.workdir_root = spec.workdir;
        return std::unique_ptr<Target>(
            std::make_unique<SlurmTarget>(std::move(login), std::move(commands), options));
    }
    return connect_ssh(*url, spec, overrides);
}

}  // namespace ncclsweep::remote
