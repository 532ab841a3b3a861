#pragma once
// Rank 0's progress on stderr: a bar redrawn in place on a terminal, or nothing here when plain
// lines were asked for (the trainer then logs its own "Train Epoch" lines).
#include <string>

namespace ddp::trainer {

class ProgressLine {
 public:
  /// `mode`: "bar", "plain", or "auto" (a bar when stderr is a terminal).
  explicit ProgressLine(const std::string& mode);
  /// Ends an open bar line, so the next output starts on a fresh line.
  ~ProgressLine() { end_line(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  bool bar() const { return bar_; }
  /// Redraws the bar line as `text` (only in bar mode).
  void redraw(const std::string& text);
  /// Moves past an open bar line before other output.
  void end_line();

 private:
  bool bar_ = false;
  bool open_ = false;
};

/// "[#####.....]": `fraction` (clamped to 0..1) of `width` cells filled.
std::string bar_cells(double fraction, int width = 30);

}  // namespace ddp::trainer
