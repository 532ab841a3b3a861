#include "trainer/progress_line.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace ddp::trainer {

ProgressLine::ProgressLine(const std::string& mode)
    : bar_(mode == "bar" || (mode == "auto" && ::isatty(STDERR_FILENO) == 1)) {}

void ProgressLine::redraw(const std::string& text) {
  if (!bar_) return;
  std::fprintf(stderr, "\r%s", text.c_str());
  std::fflush(stderr);
  open_ = true;
}

void ProgressLine::end_line() {
  if (!open_) return;
  std::fputc('\n', stderr);
  open_ = false;
}

std::string bar_cells(double fraction, int width) {
  const int filled = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * width + 0.5);
  return "[" + std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(width - filled), '.') + "]";
}

}  // namespace ddp::trainer
