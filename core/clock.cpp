#include "core/clock.hpp"

#include <thread>

namespace ncclsweep {
namespace {

class SteadyClock final : public Clock {
public:
    [[nodiscard]] TimePoint now() const override { return std::chrono::steady_clock::now(); }
    void sleep_for(std::chrono::steady_clock::duration duration) const override {
        std::this_thread::sleep_for(duration);
    }
};

}  // namespace

const Clock& steady_clock() {
    static const SteadyClock clock;
    return clock;
}

}  // namespace ncclsweep
