#include <cxxabi.h>
#include <ddp/errors.h>
#include <ddp/logging.h>

#include <cstdlib>
#include <ctime>
#include <memory>
#include <new>
#include <typeinfo>

#include "util/error_file.h"

namespace ddp {
namespace {

// "ddp::ConfigError", "std::runtime_error", "c10::Error": the exception's C++ type, as torch's
// record names the Python one.
std::string type_name(const std::exception& e) {
  const char* mangled = typeid(e).name();
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  return status == 0 && demangled ? demangled.get() : mangled;
}

// TORCHELASTIC_ERROR_FILE, set by torchrun and ddprun for each worker: the record their root-cause
// summary reads (what torch's @record writes for a Python worker). A launcher that set none gets none.
void record_in_error_file(const std::exception& e, int code) {
  const char* path = std::getenv("TORCHELASTIC_ERROR_FILE");
  if (!path || !*path) return;
  util::ErrorRecord r;
  r.message = type_name(e) + ": " + e.what();
  r.callstack = r.message + "\n(exit " + std::to_string(code) + ", " +
                (is_retryable_exit_code(code) ? "retryable" : "permanent") + "; C++, no Python traceback)";
  r.timestamp = static_cast<int64_t>(std::time(nullptr));
  try {
    util::write_error_file(path, util::error_record_json(r));
  } catch (const std::exception& write_error) {
    log_line(LogLevel::kWarn, std::string("TORCHELASTIC_ERROR_FILE: ") + write_error.what());
  }
}

}  // namespace
}  // namespace ddp

namespace ddp {

int exit_code_for(const std::exception& e) noexcept {
  if (auto* err = dynamic_cast<const Error*>(&e)) return err->exit_code();
  // Allocation failure is not a configuration problem and may be transient (a co-located job).
  if (dynamic_cast<const std::bad_alloc*>(&e)) return kExitInternal;
  return kExitInternal;
}

int report_and_exit_code(const std::exception& e) noexcept {
  int code = exit_code_for(e);
  try {
    const char* kind = is_retryable_exit_code(code) ? "retryable" : "permanent";
    log_line(LogLevel::kError, std::string(e.what()) + " (exit " + std::to_string(code) + ", " + kind + ")");
    record_in_error_file(e, code);
  } catch (...) {
  }
  return code;
}

}  // namespace ddp
