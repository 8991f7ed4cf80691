//===- BlasConfig.cpp - How the reference executor uses OpenBLAS
//-----------===//
#include "runtime/reference/ConvPoolUtils.h"
#include <mutex>

namespace solder {
namespace ref {
namespace detail {

void useSingleThreadedBlas() {
  // OpenBLAS's thread count is a process-wide library setting; set it once.
  static std::once_flag Once;
  std::call_once(Once, [] { openblas_set_num_threads(1); });
}

} // namespace detail
} // namespace ref
} // namespace solder
