#pragma once
#include "core/result.hpp"

namespace ncclsweep {

/// Exit statuses of ncclsweep (the contract README.md states: 0 done, 1 negative verdict, 2 bad input, 3
/// infrastructure).
enum class ExitStatus : int {
    done = 0,            ///< the command finished and its verdict is positive
    negative = 1,        ///< regression found (diff --fail-on-regression), crash (watch)
    bad_input = 2,       ///< bad usage or bad input; nothing was run
    infrastructure = 3,  ///< ssh, database, host busy; the sweep can be resumed
};

/// The exit status that reports `error`.
inline ExitStatus exit_status_for(const Error& error) {
    switch (error.kind) {
        case ErrorKind::bad_input:
            return ExitStatus::bad_input;
        case ErrorKind::negative_verdict:
            return ExitStatus::negative;
        case ErrorKind::infrastructure:
        case ErrorKind::internal:
            return ExitStatus::infrastructure;
    }
    return ExitStatus::infrastructure;
}

}  // namespace ncclsweep
