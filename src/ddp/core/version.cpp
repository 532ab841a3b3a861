#include <ddp/version.h>

namespace ddp {

// Compiled into libddp, so this is the library's version even when a program was built against
// other headers.
const char* version() { return DDP_VERSION_STRING; }

}  // namespace ddp
