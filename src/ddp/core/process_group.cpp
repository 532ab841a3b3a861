// Backend-independent pieces of the ProcessGroup interface.
#include <ddp/process_group.h>

namespace ddp {

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kAvg: return "avg";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
  }
  return "unknown";
}

}  // namespace ddp
