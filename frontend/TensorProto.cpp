//===- TensorProto.cpp - onnx.TensorProto <-> solder::Tensor
//---------------===//
//
// ONNX stores tensor data in one of three places: raw_data (little-endian
// bytes), a typed repeated field (float_data, int32_data holding every type
// of 16 bits or fewer, int64_data, double_data, uint64_data), or an external
// file next to the model. This file reads all of them, checking sizes before
// allocating anything, and confines external files to the model's folder.
// It also parses protobuf messages of up to 2 GB (the format's limit).
//
//===----------------------------------------------------------------------===//
#include "frontend/TensorProto.h"
#include "frontend/OnnxImporter.h"
#include "ir/FileBytes.h"
#include "ir/OpRegistry.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <climits>
#include <cstdio>
#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <sys/stat.h>
#include <unistd.h>

namespace solder {
namespace onnximport {

using onnx::TensorProto;

std::optional<DType> dtypeFromOnnx(int32_t OnnxType) {
  switch (OnnxType) {
  case TensorProto::FLOAT:
    return DType::F32;
  case TensorProto::FLOAT16:
    return DType::F16;
  case TensorProto::BFLOAT16:
    return DType::BF16;
  case TensorProto::DOUBLE:
    return DType::F64;
  case TensorProto::INT8:
    return DType::I8;
  case TensorProto::UINT8:
    return DType::U8;
  case TensorProto::INT16:
    return DType::I16;
  case TensorProto::UINT16:
    return DType::U16;
  case TensorProto::INT32:
    return DType::I32;
  case TensorProto::UINT32:
    return DType::U32;
  case TensorProto::INT64:
    return DType::I64;
  case TensorProto::UINT64:
    return DType::U64;
  case TensorProto::BOOL:
    return DType::Bool;
  default:
    return std::nullopt;
  }
}

int32_t dtypeToOnnx(DType T) {
  switch (T) {
  case DType::F32:
    return TensorProto::FLOAT;
  case DType::F16:
    return TensorProto::FLOAT16;
  case DType::BF16:
    return TensorProto::BFLOAT16;
  case DType::F64:
    return TensorProto::DOUBLE;
  case DType::I8:
    return TensorProto::INT8;
  case DType::U8:
    return TensorProto::UINT8;
  case DType::I16:
    return TensorProto::INT16;
  case DType::U16:
    return TensorProto::UINT16;
  case DType::I32:
    return TensorProto::INT32;
  case DType::U32:
    return TensorProto::UINT32;
  case DType::I64:
    return TensorProto::INT64;
  case DType::U64:
    return TensorProto::UINT64;
  case DType::Bool:
    return TensorProto::BOOL;
  case DType::Undefined:
    break;
  }
  return TensorProto::UNDEFINED;
}

std::string onnxTypeName(int32_t OnnxType) {
  if (TensorProto::DataType_IsValid(OnnxType))
    return TensorProto::DataType_Name(TensorProto::DataType(OnnxType));
  return "<type " + std::to_string(OnnxType) + ">";
}

llvm::Error checkDims(llvm::ArrayRef<int64_t> Dims, const llvm::Twine &What) {
  int64_t Count = 1;
  for (int64_t D : Dims) {
    if (D < 0)
      return makeError(What + " has a negative dim (" + llvm::Twine(D) + ")");
    if (D > MaxDimSize)
      return makeError(What + " has a dim of " + llvm::Twine(D) +
                       ", larger than solder's limit of " +
                       llvm::Twine(MaxDimSize));
    // Count and D are both <= 2^34 here, so check before multiplying.
    if (D != 0 && Count > MaxElementCount / D)
      return makeError(What + " has more than " + llvm::Twine(MaxElementCount) +
                       " elements");
    Count *= D;
  }
  return llvm::Error::success();
}

bool externalLocationEscapes(llvm::StringRef Loc) {
  bool Escapes = llvm::sys::path::is_absolute(Loc) ||
                 llvm::sys::path::has_root_name(Loc) ||
                 Loc.find('\0') != llvm::StringRef::npos;
  for (auto It = llvm::sys::path::begin(Loc), E = llvm::sys::path::end(Loc);
       It != E && !Escapes; ++It)
    Escapes = *It == "..";
  return Escapes;
}

/// Reads the bytes of an external-data tensor: the file named by `location`
/// must lie inside BaseDir (no absolute path, no `..`, no symlink leading
/// out), and [offset, offset+length) must hold exactly Expected bytes.
static llvm::Expected<std::string> readExternalData(const TensorProto &TP,
                                                    llvm::StringRef BaseDir,
                                                    uint64_t Expected,
                                                    const llvm::Twine &What) {
  std::string Location;
  uint64_t Offset = 0;
  std::optional<uint64_t> Length;
  for (const auto &KV : TP.external_data()) {
    if (KV.key() == "location") {
      Location = KV.value();
    } else if (KV.key() == "offset" || KV.key() == "length") {
      uint64_t V;
      if (llvm::StringRef(KV.value()).getAsInteger(10, V))
        return makeError(What + ": external data " + KV.key() + " '" +
                         KV.value() + "' is not a number");
      if (KV.key() == "offset")
        Offset = V;
      else
        Length = V;
    }
    // "checksum" and unknown keys carry nothing solder needs.
  }
  if (Location.empty())
    return makeError(What + ": external data without a location");
  if (BaseDir.empty())
    return makeError(What + ": external data '" + Location +
                     "' cannot be resolved (model loaded from bytes "
                     "without a base folder)");
  llvm::StringRef Loc = Location;
  if (externalLocationEscapes(Loc))
    return makeError(What + ": external data location '" + Location +
                     "' is outside the model's folder");

  llvm::SmallString<256> Full(BaseDir);
  llvm::sys::path::append(Full, Loc);
  llvm::SmallString<256> RealBase, RealFull;
  if (std::error_code EC = llvm::sys::fs::real_path(BaseDir, RealBase))
    return makeError(What + ": cannot resolve model folder '" + BaseDir +
                     "': " + EC.message());
  if (std::error_code EC = llvm::sys::fs::real_path(Full, RealFull))
    return makeError(What + ": cannot open external data file '" + Full +
                     "': " + EC.message());
  llvm::StringRef RF = RealFull;
  if (!RF.startswith(RealBase) || RF.size() <= RealBase.size() ||
      !llvm::sys::path::is_separator(RF[RealBase.size()]))
    return makeError(What + ": external data location '" + Location +
                     "' resolves outside the model's folder (to '" + RF + "')");

  if (Length && *Length != Expected)
    return makeError(What + ": external data length " + llvm::Twine(*Length) +
                     " does not match its shape (" + llvm::Twine(Expected) +
                     " bytes expected)");
  int FD = ::open(RealFull.c_str(), O_RDONLY | O_CLOEXEC);
  if (FD < 0)
    return makeError(What + ": cannot open external data file '" + RF + "'");
  struct stat St;
  if (::fstat(FD, &St) != 0 || !S_ISREG(St.st_mode)) {
    ::close(FD);
    return makeError(What + ": external data '" + RF +
                     "' is not a regular file");
  }
  uint64_t FileSize = uint64_t(St.st_size);
  if (Offset > FileSize || FileSize - Offset < Expected) {
    ::close(FD);
    return makeError(What + ": external data file '" + RF + "' has " +
                     llvm::Twine(FileSize) + " bytes, too short for " +
                     llvm::Twine(Expected) + " bytes at offset " +
                     llvm::Twine(Offset));
  }
  std::string Bytes(Expected, '\0');
  uint64_t Done = 0;
  while (Done < Expected) {
    ssize_t N =
        ::pread(FD, &Bytes[Done], Expected - Done, off_t(Offset + Done));
    if (N <= 0) {
      ::close(FD);
      return makeError(What + ": error reading external data file '" + RF +
                       "'");
    }
    Done += uint64_t(N);
  }
  ::close(FD);
  return Bytes;
}

/// Copies a typed repeated field into a fresh tensor, narrowing each element
/// to the tensor's type (int32_data holds 8/16-bit ints, bool and the bit
/// patterns of f16/bf16).
template <typename Field>
static llvm::Expected<Tensor>
fromTypedField(const Field &F, DType Elem, llvm::ArrayRef<int64_t> Dims,
               int64_t Count, llvm::StringRef FieldName,
               const llvm::Twine &What) {
  if (int64_t(F.size()) != Count)
    return makeError(What + " has " + llvm::Twine(int64_t(F.size())) +
                     " values in " + FieldName + " but its shape needs " +
                     llvm::Twine(Count));
  Tensor T(Elem, Dims);
  char *P = static_cast<char *>(T.mutableRawData());
  for (int64_t I = 0; I < Count; ++I) {
    auto V = F.Get(int(I));
    switch (Elem) {
    case DType::F32: {
      float X = float(V);
      std::memcpy(P + I * 4, &X, 4);
      break;
    }
    case DType::F64: {
      double X = double(V);
      std::memcpy(P + I * 8, &X, 8);
      break;
    }
    case DType::F16:
    case DType::BF16:
    case DType::I16:
    case DType::U16: {
      uint16_t X = uint16_t(uint64_t(V));
      std::memcpy(P + I * 2, &X, 2);
      break;
    }
    case DType::I8:
    case DType::U8: {
      uint8_t X = uint8_t(uint64_t(V));
      P[I] = char(X);
      break;
    }
    case DType::Bool:
      P[I] = V != 0 ? 1 : 0;
      break;
    case DType::I32:
    case DType::U32: {
      uint32_t X = uint32_t(uint64_t(V));
      std::memcpy(P + I * 4, &X, 4);
      break;
    }
    case DType::I64:
    case DType::U64: {
      uint64_t X = uint64_t(V);
      std::memcpy(P + I * 8, &X, 8);
      break;
    }
    case DType::Undefined:
      assert(false && "undefined dtype has no field");
      break;
    }
  }
  return T;
}

static llvm::Expected<Tensor>
convertTensor(TensorProto &TP, bool MayMove, llvm::StringRef BaseDir,
              const llvm::Twine &What, std::optional<llvm::StringRef> CutRaw,
              std::shared_ptr<const void> Owner) {
  std::optional<DType> Elem = dtypeFromOnnx(TP.data_type());
  if (!Elem)
    return makeError(What + " has element type " +
                     onnxTypeName(TP.data_type()) +
                     ", which solder does not support");
  llvm::SmallVector<int64_t, 4> Dims(TP.dims().begin(), TP.dims().end());
  if (llvm::Error E = checkDims(Dims, What))
    return E;
  if (TP.has_segment())
    return makeError(What + " is segmented, which solder does not support");
  int64_t Count = 1;
  for (int64_t D : Dims)
    Count *= D;
  uint64_t Bytes = uint64_t(Count) * dtypeSize(*Elem);

  if (TP.data_location() == TensorProto::EXTERNAL) {
    auto Data = readExternalData(TP, BaseDir, Bytes, What);
    if (!Data)
      return Data.takeError();
    return Tensor::fromBytes(*Elem, Dims, std::move(*Data));
  }
  std::optional<llvm::StringRef> Raw = CutRaw;
  if (!Raw && TP.has_raw_data())
    Raw = TP.raw_data();
  if (Raw) {
    if (Raw->size() != Bytes)
      return makeError(What + " has " + llvm::Twine(Raw->size()) +
                       " bytes of raw data but its shape " +
                       typeToString(TensorType(*Elem, Dims)) + " needs " +
                       llvm::Twine(Bytes));
    if (CutRaw && Owner)
      return Tensor::view(*Elem, Dims, Raw->data(), std::move(Owner));
    if (CutRaw || !MayMove)
      return Tensor::copyOf(*Elem, Dims, Raw->data());
    std::string Moved;
    Moved.swap(*TP.mutable_raw_data());
    return Tensor::fromBytes(*Elem, Dims, std::move(Moved));
  }
  switch (*Elem) {
  case DType::F32:
    return fromTypedField(TP.float_data(), *Elem, Dims, Count, "float_data",
                          What);
  case DType::F64:
    return fromTypedField(TP.double_data(), *Elem, Dims, Count, "double_data",
                          What);
  case DType::I64:
    return fromTypedField(TP.int64_data(), *Elem, Dims, Count, "int64_data",
                          What);
  case DType::U32:
  case DType::U64:
    return fromTypedField(TP.uint64_data(), *Elem, Dims, Count, "uint64_data",
                          What);
  default:
    return fromTypedField(TP.int32_data(), *Elem, Dims, Count, "int32_data",
                          What);
  }
}

llvm::Expected<Tensor> tensorFromProto(TensorProto &TP, llvm::StringRef BaseDir,
                                       const llvm::Twine &What,
                                       std::optional<llvm::StringRef> RawData,
                                       std::shared_ptr<const void> Owner) {
  return convertTensor(TP, /*MayMove=*/true, BaseDir, What, RawData,
                       std::move(Owner));
}

llvm::Expected<Tensor> tensorFromProtoCopy(const TensorProto &TP,
                                           llvm::StringRef BaseDir,
                                           const llvm::Twine &What) {
  // MayMove=false never writes TP.
  return convertTensor(const_cast<TensorProto &>(TP), /*MayMove=*/false,
                       BaseDir, What, std::nullopt, nullptr);
}

void tensorToProto(const Tensor &T, llvm::StringRef Name, TensorProto &TP) {
  TP.Clear();
  if (!Name.empty())
    TP.set_name(Name.str());
  TP.set_data_type(dtypeToOnnx(T.dtype()));
  for (int64_t D : T.dims())
    TP.add_dims(D);
  TP.set_raw_data(static_cast<const char *>(T.rawData()), T.byteSize());
}

static llvm::Error parseStream(google::protobuf::io::ZeroCopyInputStream &In,
                               google::protobuf::MessageLite &Msg,
                               llvm::StringRef What, llvm::StringRef Where) {
  google::protobuf::io::CodedInputStream CIS(&In);
  // Protobuf's default limit is 64 MB; ONNX models go up to the format's
  // 2 GB limit.
  CIS.SetTotalBytesLimit(INT_MAX);
  if (!Msg.ParseFromCodedStream(&CIS) || !CIS.ConsumedEntireMessage())
    return makeError(Where + ": not a valid " + What +
                     " (truncated or corrupt protobuf)");
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readProtoFile(llvm::StringRef Path, llvm::StringRef What) {
  // A large file is mapped, not read: the weights are used in place (see
  // OnnxWire.h); ir/FileBytes.h says when a file is read instead.
  auto Buf = readFileBytes(Path, What);
  if (!Buf)
    return Buf.takeError();
  if ((*Buf)->getBufferSize() == 0)
    return makeError("'" + Path + "' is empty, not a " + What);
  if ((*Buf)->getBufferSize() > size_t(INT_MAX))
    return makeError("'" + Path + "' is larger than 2 GB, protobuf's limit; " +
                     "store large weights as external data");
  return std::move(*Buf);
}

llvm::Error parseProtoFile(llvm::StringRef Path,
                           google::protobuf::MessageLite &Msg,
                           llvm::StringRef What) {
  auto Buf = readProtoFile(Path, What);
  if (!Buf)
    return Buf.takeError();
  return parseProtoBytes((*Buf)->getBuffer(), Msg, What,
                         ("'" + Path + "'").str());
}

llvm::Error parseProtoBytes(llvm::StringRef Bytes,
                            google::protobuf::MessageLite &Msg,
                            llvm::StringRef What, llvm::StringRef Where) {
  if (Bytes.empty())
    return makeError("empty input, not a " + What);
  if (Bytes.size() > size_t(INT_MAX))
    return makeError(What + " is larger than 2 GB, protobuf's limit");
  google::protobuf::io::ArrayInputStream In(Bytes.data(), int(Bytes.size()));
  return parseStream(In, Msg, What, Where);
}

} // namespace onnximport

llvm::Expected<Tensor> readTensorProtoFile(llvm::StringRef Path) {
  onnx::TensorProto TP;
  if (llvm::Error E = onnximport::parseProtoFile(Path, TP, "ONNX TensorProto"))
    return E;
  llvm::SmallString<256> Dir(Path);
  llvm::sys::path::remove_filename(Dir);
  if (Dir.empty())
    Dir = ".";
  return onnximport::tensorFromProto(
      TP, Dir, "tensor '" + TP.name() + "' in '" + Path + "'");
}

llvm::Error writeTensorProtoFile(llvm::StringRef Path, const Tensor &T,
                                 llvm::StringRef Name) {
  if (T.isNull())
    return makeError("cannot write a null tensor to '" + Path + "'");
  onnx::TensorProto TP;
  onnximport::tensorToProto(T, Name, TP);
  std::string Bytes;
  if (!TP.SerializeToString(&Bytes))
    return makeError("cannot serialize tensor for '" + Path + "'");
  std::error_code EC;
  llvm::raw_fd_ostream OS(Path, EC);
  if (EC)
    return makeError("cannot write '" + Path + "': " + EC.message());
  OS << Bytes;
  OS.close();
  if (OS.has_error())
    return makeError("error writing '" + Path + "'");
  return llvm::Error::success();
}

} // namespace solder
