#include <ddp/errors.h>
#include <ddp/logging.h>

#include <new>

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
  } catch (...) {
  }
  return code;
}

}  // namespace ddp
