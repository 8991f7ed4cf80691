//===- DLPack.h - The DLPack tensor structs, written from the spec -*- C++
//-*-===//
//
// DLPack (https://dmlc.github.io/dlpack/latest/) is the C ABI through which
// array libraries share memory: `obj.__dlpack__(stream=...)` returns a
// PyCapsule named "dltensor" holding a DLManagedTensor. These are the
// unversioned (0.x, "legacy") structs every producer supports; the layout
// is fixed by the spec's C header and checked below. solder only consumes
// capsules: it reads the tensor while the capsule is alive and never calls
// the deleter itself (the capsule's destructor does, as the name stays
// "dltensor").
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PYTHON_DLPACK_H
#define SOLDER_PYTHON_DLPACK_H

#include <cstddef>
#include <cstdint>

namespace solder::dlpack {

/// DLDeviceType values solder tells apart.
enum DeviceType : int32_t {
  CPU = 1,
  CUDA = 2,
  CUDAHost = 3, ///< pinned host memory
};

struct Device {
  int32_t Type; ///< a DeviceType (a C enum: int-sized)
  int32_t Id;
};

/// DLDataTypeCode values.
enum TypeCode : uint8_t {
  Int = 0,
  UInt = 1,
  Float = 2,
  Bfloat = 4,
  Bool = 6,
};

struct DataType {
  uint8_t Code;
  uint8_t Bits;
  uint16_t Lanes;
};

/// DLTensor.
struct Tensor {
  void *Data;
  Device Dev;
  int32_t NDim;
  DataType DType;
  int64_t *Shape;
  int64_t *Strides; ///< in elements; null = compact row-major
  uint64_t ByteOffset;
};

/// DLManagedTensor.
struct ManagedTensor {
  Tensor DLTensor;
  void *ManagerCtx;
  void (*Deleter)(ManagedTensor *Self);
};

static_assert(sizeof(Device) == 8 && sizeof(DataType) == 4 &&
                  sizeof(Tensor) == 48 && sizeof(ManagedTensor) == 64 &&
                  offsetof(Tensor, Shape) == 24 &&
                  offsetof(Tensor, ByteOffset) == 40,
              "the DLPack layout is fixed by its C header");

/// The capsule name of an unconsumed legacy DLPack export.
constexpr const char *CapsuleName = "dltensor";

} // namespace solder::dlpack

#endif
