#include "engine/check.h"

namespace trainsim {

void fail_internal_check(const char* file, int line, const char* condition,
                         const std::string& message) {
  throw InternalError(std::string("internal error at ") + file + ":" + std::to_string(line) +
                      ": (" + condition + ") " + message);
}

}  // namespace trainsim
