// Internal invariant checks. TRAINSIM_ASSERT guards conditions that no input can trigger; a failure
// is a trainsim bug and throws InternalError (library code never aborts or exits).
#pragma once

#include <stdexcept>
#include <string>

namespace trainsim {

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void fail_internal_check(const char* file, int line, const char* condition,
                                      const std::string& message);

}  // namespace trainsim

#define TRAINSIM_ASSERT(condition, message)                                       \
  do {                                                                            \
    if (!(condition)) [[unlikely]] {                                              \
      ::trainsim::fail_internal_check(__FILE__, __LINE__, #condition, (message)); \
    }                                                                             \
  } while (false)
