// CheckpointFlags::set, compiled into libddp so the counts are read by util::parse_int like every
// other number a flag or variable gives (one wording of a bad value), not by a copy in the header.
#include <ddp/checkpoint_flags.h>
#include <ddp/errors.h>

#include "util/numbers.h"

namespace ddp {

bool CheckpointFlags::set(const std::string& name, const std::string& value) {
  if (name == "checkpoint-dir") {
    dir = value;
  } else if (name == "checkpoint-every") {
    every = util::parse_int("--checkpoint-every", value, 0, INT64_C(1) << 40);
  } else if (name == "checkpoint-keep") {
    keep = static_cast<int>(util::parse_int("--checkpoint-keep", value, 0, 1000000));
  } else if (name == "resume") {
    if (value.empty()) throw ConfigError("--resume is empty: expected auto, none or a checkpoint file");
    resume = value;
  } else {
    return false;
  }
  return true;
}

}  // namespace ddp
