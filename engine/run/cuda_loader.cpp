// cuda_available, run_cuda and run_measure_collectives as tpverify calls them. Built with CUDA,
// they load the CUDA backend module on first use (engine/run/cuda_module.hpp says why it is a
// module); built without, they say so.
#include <string>

#include "engine/run/backend.hpp"

#if defined(TPVERIFY_HAVE_CUDA)
#include <dlfcn.h>
#include <unistd.h>

#include "engine/launch/launch.hpp"
#include "engine/run/cuda_module.hpp"
#endif

namespace tpverify {

#if defined(TPVERIFY_HAVE_CUDA)

namespace {

struct CudaModule {
    decltype(&tpverify_cuda_device_count) device_count = nullptr;
    decltype(&tpverify_cuda_run) run = nullptr;
    decltype(&tpverify_cuda_measure) measure = nullptr;
    std::string error;  ///< why it could not be loaded; "" when it was
};

std::string module_path() {
    const std::string exe = self_exe(nullptr);
    const auto slash = exe.rfind('/');
    return (slash == std::string::npos ? std::string(".") : exe.substr(0, slash)) + "/" + k_cuda_module_file;
}

template <typename F>
F symbol(void* handle, const char* name) {
    return reinterpret_cast<F>(::dlsym(handle, name));
}

CudaModule load_module() {
    CudaModule m;
    const std::string path = module_path();
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* why = ::dlerror();
        m.error =
            "the CUDA backend " + path + " could not be loaded: " + (why != nullptr ? why : "unknown error");
        return m;
    }
    const auto abi = symbol<decltype(&tpverify_cuda_abi)>(handle, "tpverify_cuda_abi");
    const std::string ours = cuda_module_abi();
    if (abi == nullptr || ours != abi()) {
        m.error = "the CUDA backend " + path + " is from another build (" +
                  (abi != nullptr ? std::string(abi()) : std::string("no tpverify_cuda_abi")) +
                  "; this tpverify: " + ours + "); rebuild both together";
        ::dlclose(handle);
        return m;
    }
    m.device_count = symbol<decltype(m.device_count)>(handle, "tpverify_cuda_device_count");
    m.run = symbol<decltype(m.run)>(handle, "tpverify_cuda_run");
    m.measure = symbol<decltype(m.measure)>(handle, "tpverify_cuda_measure");
    if (m.device_count == nullptr || m.run == nullptr || m.measure == nullptr) {
        m.error = "the CUDA backend " + path + " lacks its entry points; rebuild tpverify";
        ::dlclose(handle);
    }
    return m;
}

const CudaModule& module() {
    static const CudaModule m = load_module();
    return m;
}

// CUDA reaches a GPU only through the NVIDIA driver's device node: /dev/nvidiactl (Linux),
// /dev/dxg (WSL 2), /dev/nvhost-ctrl-gpu (Jetson). Without one no GPU can be visible, and
// loading the module (cudart, cuBLAS, NCCL) to learn that would cost ~0.4 s.
bool driver_present() {
    for (const char* node : {"/dev/nvidiactl", "/dev/dxg", "/dev/nvhost-ctrl-gpu"})
        if (::access(node, F_OK) == 0) return true;
    return false;
}

int module_error(Reporter& reporter, const std::string& error) {
    reporter.error("init", "dlopen", error);
    return static_cast<int>(Exit::failure);
}

}  // namespace

std::string cuda_unavailable_reason() {
    if (!driver_present())
        return "no NVIDIA driver on this host (no /dev/nvidiactl), so no CUDA GPU is visible";
    const CudaModule& m = module();
    if (!m.error.empty()) return m.error;
    const int count = m.device_count();
    if (count < 0) return "no CUDA GPU is visible (cudaGetDeviceCount failed)";
    if (count == 0) return "no CUDA GPU is visible";
    return {};
}

int run_cuda(const Options& options, const PassPlan& plan, Reporter& reporter) {
    const CudaModule& m = module();
    if (!m.error.empty()) return module_error(reporter, m.error);
    return m.run(&options, &plan, &reporter);
}

int run_measure_collectives(const Options& options, const PassPlan& plan, Reporter& reporter,
                            const std::string& command) {
    const CudaModule& m = module();
    if (!m.error.empty()) return module_error(reporter, m.error);
    return m.measure(&options, &plan, &reporter, command.c_str());
}

#else  // built without CUDA

std::string cuda_unavailable_reason() {
    return "this tpverify was built without CUDA";
}

int run_cuda(const Options&, const PassPlan&, Reporter& reporter) {
    reporter.error(
        "init", "cudaGetDeviceCount",
        "this tpverify was built without CUDA (rebuild on a host with nvcc and NCCL, or use --backend sim)");
    return static_cast<int>(Exit::failure);
}

int run_measure_collectives(const Options&, const PassPlan&, Reporter& reporter, const std::string&) {
    reporter.error("init", "cudaGetDeviceCount",
                   "--measure-collectives needs the CUDA backend, and this tpverify was built without CUDA "
                   "(rebuild on a host with nvcc and NCCL; scripts/device-measure-collectives.sh does)");
    return static_cast<int>(Exit::failure);
}

#endif

bool cuda_available() {
    return cuda_unavailable_reason().empty();
}

}  // namespace tpverify
