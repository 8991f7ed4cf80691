//===- Operand.cpp - A Python array as a model input or output ------------===//
#include "Operand.h"
#include "DLPack.h"
#include "ir/Type.h"
#include <optional>

namespace solder::python {

PyObject *&solderErrorClass() {
  static PyObject *Class = nullptr;
  return Class;
}

void raiseSolderError(const std::string &Message) {
  PyErr_SetString(solderErrorClass(), Message.c_str());
}

/// Replaces the pending Python exception by a SolderError whose message is
/// Prefix followed by the exception's text.
static void reraiseWithPrefix(const std::string &Prefix) {
  PyObject *Type, *Value, *Trace;
  PyErr_Fetch(&Type, &Value, &Trace);
  std::string Text = "unknown error";
  if (PyObject *Str = Value ? PyObject_Str(Value) : nullptr) {
    if (const char *C = PyUnicode_AsUTF8AndSize(Str, nullptr))
      Text = C;
    Py_DECREF(Str);
  }
  PyErr_Clear();
  Py_XDECREF(Type);
  Py_XDECREF(Value);
  Py_XDECREF(Trace);
  raiseSolderError(Prefix + Text);
}

static std::string dimsText(const int64_t *Dims, size_t Rank) {
  std::string S = "[";
  for (size_t I = 0; I < Rank; ++I)
    S += (I ? "," : "") + std::to_string(Dims[I]);
  return S + "]";
}

static std::string expected(const TensorInfo &T) {
  return typeToString(TensorType(T.Elem, T.Dims));
}

/// The element type of a buffer-protocol format ("f", "<f8"-style formats
/// are not produced by NumPy for native arrays) of the given item size.
static std::optional<DType> bufferDType(const char *Format, size_t ItemSize) {
  std::string F = Format ? Format : "B";
  if (!F.empty() && (F[0] == '@' || F[0] == '=' || F[0] == '<'))
    F.erase(0, 1);
  if (F.size() != 1)
    return std::nullopt; // big-endian, structured or multi-item formats
  auto BySize = [&](DType D1, DType D2, DType D4,
                    DType D8) -> std::optional<DType> {
    switch (ItemSize) {
    case 1:
      return D1;
    case 2:
      return D2;
    case 4:
      return D4;
    case 8:
      return D8;
    }
    return std::nullopt;
  };
  switch (F[0]) {
  case 'e':
    return ItemSize == 2 ? std::optional(DType::F16) : std::nullopt;
  case 'f':
    return ItemSize == 4 ? std::optional(DType::F32) : std::nullopt;
  case 'd':
    return ItemSize == 8 ? std::optional(DType::F64) : std::nullopt;
  case '?':
    return ItemSize == 1 ? std::optional(DType::Bool) : std::nullopt;
  case 'b':
  case 'h':
  case 'i':
  case 'l':
  case 'q':
    return BySize(DType::I8, DType::I16, DType::I32, DType::I64);
  case 'B':
  case 'H':
  case 'I':
  case 'L':
  case 'Q':
    return BySize(DType::U8, DType::U16, DType::U32, DType::U64);
  }
  return std::nullopt;
}

static std::optional<DType> dlpackDType(const dlpack::DataType &T) {
  if (T.Lanes != 1)
    return std::nullopt;
  switch (T.Code) {
  case dlpack::Float:
    if (T.Bits == 16)
      return DType::F16;
    if (T.Bits == 32)
      return DType::F32;
    if (T.Bits == 64)
      return DType::F64;
    break;
  case dlpack::Bfloat:
    if (T.Bits == 16)
      return DType::BF16;
    break;
  case dlpack::Bool:
    if (T.Bits == 8)
      return DType::Bool;
    break;
  case dlpack::Int:
  case dlpack::UInt: {
    bool S = T.Code == dlpack::Int;
    switch (T.Bits) {
    case 8:
      return S ? DType::I8 : DType::U8;
    case 16:
      return S ? DType::I16 : DType::U16;
    case 32:
      return S ? DType::I32 : DType::U32;
    case 64:
      return S ? DType::I64 : DType::U64;
    }
    break;
  }
  }
  return std::nullopt;
}

/// Checks the element type and dims of a candidate against T.
static bool checkType(std::optional<DType> Elem, const std::string &ElemText,
                      const int64_t *Dims, size_t Rank, const TensorInfo &T,
                      const std::string &Role) {
  bool SameDims = Rank == T.Dims.size();
  for (size_t I = 0; SameDims && I < Rank; ++I)
    SameDims = Dims[I] == T.Dims[I];
  if (Elem == T.Elem && SameDims)
    return true;
  raiseSolderError(Role + ": expected " + expected(T) + ", got " +
                   (Elem ? std::string(dtypeName(*Elem)) : ElemText) +
                   dimsText(Dims, Rank));
  return false;
}

bool Operand::acquire(PyObject *Obj, const TensorInfo &T,
                      const std::string &Role, bool Writable,
                      long long DLPackStream) {
  release();
  // The buffer protocol first: NumPy arrays (read-only ones too, which
  // NumPy refuses to export through DLPack) are host memory.
  if (PyObject_CheckBuffer(Obj))
    return acquireBuffer(Obj, T, Role, Writable);
  if (PyObject_HasAttrString(Obj, "__dlpack__"))
    return acquireDLPack(Obj, T, Role, DLPackStream);
  PyObject *TypeName = PyObject_GetAttrString(
      reinterpret_cast<PyObject *>(Py_TYPE(Obj)), "__name__");
  const char *Name =
      TypeName ? PyUnicode_AsUTF8AndSize(TypeName, nullptr) : nullptr;
  std::string Msg = Role +
                    ": expected a NumPy array or a tensor with __dlpack__, "
                    "got " +
                    (Name ? Name : "an object of unknown type");
  Py_XDECREF(TypeName);
  PyErr_Clear();
  raiseSolderError(Msg);
  return false;
}

bool Operand::acquireBuffer(PyObject *Obj, const TensorInfo &T,
                            const std::string &Role, bool Writable) {
  int Flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
  if (Writable)
    Flags |= PyBUF_WRITABLE;
  if (PyObject_GetBuffer(Obj, &View, Flags) != 0) {
    reraiseWithPrefix(Role + ": ");
    return false;
  }
  HasView = true;
  std::optional<DType> Elem = bufferDType(View.format, size_t(View.itemsize));
  std::vector<int64_t> Dims(View.shape, View.shape + View.ndim);
  if (!checkType(Elem,
                 std::string("format '") + (View.format ? View.format : "B") +
                     "' ",
                 Dims.data(), Dims.size(), T, Role)) {
    release();
    return false;
  }
  Data = static_cast<char *>(View.buf);
  Bytes = size_t(View.len);
  Device = -1;
  return true;
}

bool Operand::acquireDLPack(PyObject *Obj, const TensorInfo &T,
                            const std::string &Role, long long DLPackStream) {
  // Where the tensor lives decides the stream argument: CUDA producers
  // order their pending work before the consumer's stream; host producers
  // take none.
  PyObject *Where = PyObject_CallMethod(Obj, "__dlpack_device__", nullptr);
  long DevType = 0, DevId = 0;
  bool WhereOk = Where && PyTuple_Check(Where) && PyTuple_Size(Where) == 2;
  if (WhereOk) {
    DevType = PyLong_AsLong(PyTuple_GetItem(Where, 0));
    DevId = PyLong_AsLong(PyTuple_GetItem(Where, 1));
    WhereOk = !PyErr_Occurred();
  }
  Py_XDECREF(Where);
  if (!WhereOk) {
    if (PyErr_Occurred())
      reraiseWithPrefix(Role + ": __dlpack_device__ failed: ");
    else
      raiseSolderError(Role + ": __dlpack_device__ did not return a "
                              "(device_type, device_id) pair");
    return false;
  }
  if (DevType == dlpack::CUDA) {
    PyObject *Method = PyObject_GetAttrString(Obj, "__dlpack__");
    PyObject *Args = PyTuple_New(0);
    PyObject *Kwargs = PyDict_New();
    PyObject *Stream = PyLong_FromLongLong(DLPackStream);
    if (Method && Args && Kwargs && Stream &&
        PyDict_SetItemString(Kwargs, "stream", Stream) == 0)
      Capsule = PyObject_Call(Method, Args, Kwargs);
    Py_XDECREF(Stream);
    Py_XDECREF(Kwargs);
    Py_XDECREF(Args);
    Py_XDECREF(Method);
  } else if (DevType == dlpack::CPU || DevType == dlpack::CUDAHost) {
    Capsule = PyObject_CallMethod(Obj, "__dlpack__", nullptr);
  } else {
    raiseSolderError(Role + ": DLPack device type " + std::to_string(DevType) +
                     " is neither CUDA nor host memory");
    return false;
  }
  if (!Capsule) {
    reraiseWithPrefix(Role + ": __dlpack__ failed: ");
    return false;
  }
  auto *Managed = static_cast<dlpack::ManagedTensor *>(
      PyCapsule_GetPointer(Capsule, dlpack::CapsuleName));
  if (!Managed) {
    PyErr_Clear();
    release();
    raiseSolderError(Role + ": __dlpack__ did not return an unused "
                            "\"dltensor\" capsule");
    return false;
  }
  const dlpack::Tensor &D = Managed->DLTensor;
  if (D.NDim < 0 || (D.NDim > 0 && !D.Shape)) {
    release();
    raiseSolderError(Role + ": malformed DLPack tensor (rank " +
                     std::to_string(D.NDim) + ")");
    return false;
  }
  std::optional<DType> Elem = dlpackDType(D.DType);
  std::string ElemText = "DLPack type (code " + std::to_string(D.DType.Code) +
                         ", " + std::to_string(D.DType.Bits) + " bits, " +
                         std::to_string(D.DType.Lanes) + " lanes) ";
  if (!checkType(Elem, ElemText, D.Shape, size_t(D.NDim), T, Role)) {
    release();
    return false;
  }
  // Only dense row-major tensors; a dim of size 1 may carry any stride.
  if (D.Strides) {
    int64_t Want = 1;
    for (int32_t I = D.NDim - 1; I >= 0; --I) {
      if (D.Shape[I] != 1 && D.Strides[I] != Want) {
        release();
        raiseSolderError(Role + ": the tensor is not contiguous (strides " +
                         dimsText(D.Strides, size_t(D.NDim)) + " for shape " +
                         dimsText(D.Shape, size_t(D.NDim)) +
                         "); pass tensor.contiguous()");
        return false;
      }
      Want *= D.Shape[I];
    }
  }
  Data = static_cast<char *>(D.Data) + D.ByteOffset;
  Bytes = T.bytes();
  Device = DevType == dlpack::CUDA ? int(DevId) : -1;
  return true;
}

void Operand::release() {
  if (HasView)
    PyBuffer_Release(&View);
  HasView = false;
  // The capsule's destructor calls the producer's deleter: the name is
  // still "dltensor", as solder never takes ownership.
  Py_CLEAR(Capsule);
  Data = nullptr;
  Bytes = 0;
  Device = -1;
}

} // namespace solder::python
