//===- Operand.h - A Python array as a model input or output ----*- C++ -*-===//
//
// Turns one Python object passed to Context.run into memory solder can read
// or write: a host buffer (NumPy arrays and anything with the buffer
// protocol) or a DLPack export (torch/CuPy tensors, on the GPU or the host).
// The dtype, shape and layout are checked against the model's TensorInfo
// with errors naming the input or output; device memory is used in place.
// Needs the GIL to acquire and to release; the memory may be used without.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PYTHON_OPERAND_H
#define SOLDER_PYTHON_OPERAND_H

// Built against the stable ABI (Py_LIMITED_API, set by CMake) so one
// module serves every CPython from 3.11 on.
#define PY_SSIZE_T_CLEAN
#include "solder/Solder.h"
#include <Python.h>
#include <cstdint>
#include <string>

namespace solder::python {

class Operand {
public:
  Operand() = default;
  Operand(const Operand &) = delete;
  Operand &operator=(const Operand &) = delete;
  ~Operand() { release(); }

  /// Reads Obj as a tensor of type T. Role is "input 'x'" or "output 'y'",
  /// Writable asks for memory solder may write. DLPackStream is the
  /// `stream` passed to a CUDA tensor's __dlpack__ (the stream the run is
  /// ordered on, 1 for the legacy default stream). On failure returns
  /// false with a Python exception set.
  bool acquire(PyObject *Obj, const TensorInfo &T, const std::string &Role,
               bool Writable, long long DLPackStream);
  /// Drops the buffer view or capsule (GIL held).
  void release();

  bool onDevice() const { return Device >= 0; }
  /// The CUDA device of device memory; -1 for host memory.
  int device() const { return Device; }
  char *data() const { return Data; }
  size_t bytes() const { return Bytes; }

private:
  bool acquireBuffer(PyObject *Obj, const TensorInfo &T,
                     const std::string &Role, bool Writable);
  bool acquireDLPack(PyObject *Obj, const TensorInfo &T,
                     const std::string &Role, long long DLPackStream);

  char *Data = nullptr;
  size_t Bytes = 0;
  int Device = -1;
  Py_buffer View;
  bool HasView = false;
  PyObject *Capsule = nullptr;
};

/// Raises solder.SolderError(Message).
void raiseSolderError(const std::string &Message);
/// The module's SolderError class (set up when the module loads).
PyObject *&solderErrorClass();

} // namespace solder::python

#endif
