#pragma once
// The Gloo classes our headers name only by pointer, declared once so that those headers need not
// include Gloo's (which pull in its transport and its thread pools).

namespace gloo {
class Context;
namespace transport {
class UnboundBuffer;
}  // namespace transport
}  // namespace gloo
