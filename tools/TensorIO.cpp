//===- TensorIO.cpp - Tensors from and to files ---------------------------===//
//
// The .npy reader parses the header dict (a Python literal) with a small
// tokenizer instead of string searches, so keys in any order and any
// spacing numpy or other writers produce are accepted. Every size read from
// a file is checked before anything is allocated.
//
//===----------------------------------------------------------------------===//
#include "tools/TensorIO.h"
#include "frontend/OnnxImporter.h"
#include "ir/FileBytes.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace solder {

static Error npyError(StringRef Name, const Twine &Msg) {
  return createStringError(inconvertibleErrorCode(),
                           "'" + Name + "': invalid .npy file: " + Msg);
}

namespace {
/// The numpy dtype string of each solder dtype (little-endian).
struct NpyDescr {
  DType Type;
  const char *Descr;
};
} // namespace

static const NpyDescr NpyDescrs[] = {
    {DType::F32, "<f4"},  {DType::F16, "<f2"}, {DType::F64, "<f8"},
    {DType::I8, "|i1"},   {DType::U8, "|u1"},  {DType::I16, "<i2"},
    {DType::U16, "<u2"},  {DType::I32, "<i4"}, {DType::U32, "<u4"},
    {DType::I64, "<i8"},  {DType::U64, "<u8"}, {DType::Bool, "|b1"},
    {DType::BF16, "<u2"}, // raw bits: numpy has no bfloat16
};

static std::optional<DType> dtypeFromDescr(StringRef D) {
  if (D.size() != 3)
    return std::nullopt;
  // '=' is native order (little-endian on every host solder runs on); '|'
  // and '<' are interchangeable for one-byte types.
  char Order = D[0];
  if (Order != '<' && Order != '|' && Order != '=')
    return std::nullopt;
  for (const NpyDescr &E : NpyDescrs)
    if (E.Type != DType::BF16 && D.substr(1) == StringRef(E.Descr).substr(1))
      return E.Type;
  return std::nullopt;
}

bool npyStoresAsRawBits(DType T) { return T == DType::BF16; }

namespace {
/// Tokenizer/parser for the header dict: {'key': value, ...} where a value
/// is a quoted string, True/False, or a tuple of integers.
class HeaderParser {
public:
  explicit HeaderParser(StringRef Text) : Text(Text) {}

  Error parse(std::string &Descr, bool &Fortran, SmallVectorImpl<int64_t> &Dims,
              StringRef Name) {
    bool HaveDescr = false, HaveFortran = false, HaveShape = false;
    if (!consume('{'))
      return npyError(Name, "header is not a dict");
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string Key;
      if (!parseString(Key) || !consume(':'))
        return npyError(Name, "malformed header key");
      if (Key == "descr") {
        if (!parseString(Descr))
          return npyError(Name, "'descr' is not a string (structured dtypes "
                                "are not supported)");
        HaveDescr = true;
      } else if (Key == "fortran_order") {
        skipSpace();
        if (Text.consume_front("True"))
          Fortran = true;
        else if (Text.consume_front("False"))
          Fortran = false;
        else
          return npyError(Name, "'fortran_order' is not True/False");
        HaveFortran = true;
      } else if (Key == "shape") {
        if (Error E = parseShape(Dims, Name))
          return E;
        HaveShape = true;
      } else {
        return npyError(Name, "unexpected header key '" + Key + "'");
      }
      skipSpace();
      if (consume(','))
        continue;
      if (consume('}'))
        break;
      return npyError(Name, "malformed header dict");
    }
    if (!HaveDescr || !HaveFortran || !HaveShape)
      return npyError(Name, "header lacks descr, fortran_order or shape");
    return Error::success();
  }

private:
  void skipSpace() { Text = Text.ltrim(" \t\r\n"); }
  bool consume(char C) {
    skipSpace();
    return Text.consume_front(StringRef(&C, 1));
  }
  bool parseString(std::string &Out) {
    skipSpace();
    if (Text.empty() || (Text[0] != '\'' && Text[0] != '"'))
      return false;
    char Quote = Text[0];
    size_t End = Text.find(Quote, 1);
    if (End == StringRef::npos)
      return false;
    Out = Text.substr(1, End - 1).str();
    Text = Text.drop_front(End + 1);
    return true;
  }
  Error parseShape(SmallVectorImpl<int64_t> &Dims, StringRef Name) {
    if (!consume('('))
      return npyError(Name, "'shape' is not a tuple");
    while (true) {
      skipSpace();
      if (consume(')'))
        return Error::success();
      size_t Len = 0;
      while (Len < Text.size() && isDigit(Text[Len]))
        ++Len;
      uint64_t D;
      // Text.substr(0, Len).getAsInteger fails on overflow too.
      if (Len == 0 || Len > 18 || Text.substr(0, Len).getAsInteger(10, D))
        return npyError(Name, "bad dimension in 'shape'");
      if (int64_t(D) > MaxDimSize)
        return npyError(Name, formatv("dimension {0} exceeds the limit {1}", D,
                                      MaxDimSize));
      Dims.push_back(int64_t(D));
      Text = Text.drop_front(Len);
      skipSpace();
      if (consume(','))
        continue;
      if (consume(')'))
        return Error::success();
      return npyError(Name, "malformed 'shape' tuple");
    }
  }

  StringRef Text;
};
} // namespace

Expected<Tensor> parseNpy(StringRef Bytes, StringRef Name) {
  static const char Magic[] = "\x93NUMPY";
  if (!Bytes.startswith(StringRef(Magic, 6)))
    return npyError(Name, "missing \\x93NUMPY magic");
  if (Bytes.size() < 10)
    return npyError(Name, "truncated header");
  uint8_t Major = uint8_t(Bytes[6]);
  size_t HeaderLen, Offset;
  if (Major == 1) {
    HeaderLen = uint8_t(Bytes[8]) | (size_t(uint8_t(Bytes[9])) << 8);
    Offset = 10;
  } else if (Major == 2 || Major == 3) {
    if (Bytes.size() < 12)
      return npyError(Name, "truncated header");
    HeaderLen = 0;
    for (int I = 0; I < 4; ++I)
      HeaderLen |= size_t(uint8_t(Bytes[8 + I])) << (8 * I);
    Offset = 12;
  } else {
    return npyError(Name, formatv("unsupported format version {0}.{1}", Major,
                                  unsigned(uint8_t(Bytes[7]))));
  }
  if (Bytes.size() - Offset < HeaderLen)
    return npyError(Name, "truncated header");
  StringRef Header = Bytes.substr(Offset, HeaderLen);
  StringRef Data = Bytes.drop_front(Offset + HeaderLen);

  std::string Descr;
  bool Fortran = false;
  SmallVector<int64_t, 4> Dims;
  if (Error E = HeaderParser(Header).parse(Descr, Fortran, Dims, Name))
    return E;
  if (Fortran)
    return npyError(Name, "fortran_order True is not supported (save the "
                          "array with np.ascontiguousarray first)");
  std::optional<DType> Type = dtypeFromDescr(Descr);
  if (!Type)
    return npyError(Name, "unsupported dtype '" + Descr + "'");
  int64_t Count = 1;
  for (int64_t D : Dims) {
    if (D != 0 && Count > MaxElementCount / D)
      return npyError(Name, "element count exceeds the limit");
    Count *= D;
  }
  uint64_t Expected = uint64_t(Count) * dtypeSize(*Type);
  if (Data.size() != Expected)
    return npyError(Name, formatv("data has {0} bytes, shape and dtype need "
                                  "{1}",
                                  Data.size(), Expected));
  Tensor T = Tensor::copyOf(*Type, Dims, Data.data());
  if (*Type == DType::Bool) {
    // Normalize to 0/1 so kernels can rely on it.
    uint8_t *P = T.mutableData<uint8_t>();
    for (int64_t I = 0; I < Count; ++I)
      P[I] = P[I] != 0;
  }
  return T;
}

std::string serializeNpy(const Tensor &T) {
  const char *Descr = nullptr;
  for (const NpyDescr &E : NpyDescrs)
    if (E.Type == T.dtype())
      Descr = E.Descr;
  assert(Descr && "every defined dtype has a .npy descr");
  std::string Dict;
  raw_string_ostream OS(Dict);
  OS << "{'descr': '" << Descr << "', 'fortran_order': False, 'shape': (";
  for (int64_t D : T.dims())
    OS << D << (T.rank() == 1 ? "," : ", ");
  if (T.rank() > 1)
    Dict.resize(Dict.size() - 2);
  OS << "), }";
  OS.flush();
  // Header (magic + version + length + dict + '\n') padded with spaces to a
  // multiple of 64 bytes, as numpy writes it.
  bool V2 = Dict.size() + 1 + 10 + 64 > 65535;
  size_t Prefix = V2 ? 12 : 10;
  size_t Total = (Prefix + Dict.size() + 1 + 63) / 64 * 64;
  Dict.append(Total - Prefix - Dict.size() - 1, ' ');
  Dict.push_back('\n');
  std::string Out("\x93NUMPY", 6);
  Out.push_back(V2 ? 2 : 1);
  Out.push_back(0);
  size_t Len = Dict.size();
  for (size_t I = 0; I < (V2 ? 4u : 2u); ++I)
    Out.push_back(char((Len >> (8 * I)) & 0xff));
  Out += Dict;
  Out.append(static_cast<const char *>(T.rawData()), T.byteSize());
  return Out;
}

static Expected<std::string> readWholeFile(StringRef Path) {
  // Read, never mapped (the bytes are copied anyway), so a file truncated
  // meanwhile cannot fault.
  Expected<std::unique_ptr<MemoryBuffer>> Buf =
      readFileBytes(Path, "tensor file", /*MapAbove=*/UINT64_MAX);
  if (!Buf)
    return Buf.takeError();
  return (*Buf)->getBuffer().str();
}

Expected<Tensor> readNpyFile(StringRef Path) {
  Expected<std::string> Bytes = readWholeFile(Path);
  if (!Bytes)
    return Bytes.takeError();
  return parseNpy(*Bytes, Path);
}

Error writeFileAtomically(StringRef Path, StringRef Bytes) {
  SmallString<256> Model(Path);
  Model += ".tmp-%%%%%%";
  int FD;
  SmallString<256> TmpPath;
  if (std::error_code EC = sys::fs::createUniqueFile(Model, FD, TmpPath))
    return createStringError(EC, "cannot create a file beside '" + Path +
                                     "': " + EC.message());
  {
    raw_fd_ostream OS(FD, /*shouldClose=*/true);
    OS << Bytes;
    OS.close();
    if (OS.has_error()) {
      std::error_code EC = OS.error();
      OS.clear_error();
      sys::fs::remove(TmpPath);
      return createStringError(EC, "cannot write '" + TmpPath +
                                       "': " + EC.message());
    }
  }
  if (std::error_code EC = sys::fs::rename(TmpPath, Path)) {
    sys::fs::remove(TmpPath);
    return createStringError(EC, "cannot rename '" + TmpPath + "' to '" + Path +
                                     "': " + EC.message());
  }
  return Error::success();
}

Error writeNpyFile(StringRef Path, const Tensor &T) {
  return writeFileAtomically(Path, serializeNpy(T));
}

static bool hasExtension(StringRef Path, StringRef Ext) {
  return sys::path::extension(Path).equals_insensitive(Ext);
}

Expected<Tensor> readTensorFile(StringRef Path) {
  if (hasExtension(Path, ".npy"))
    return readNpyFile(Path);
  if (hasExtension(Path, ".pb"))
    return readTensorProtoFile(Path);
  return createStringError(inconvertibleErrorCode(),
                           "'" + Path +
                               "': unknown tensor file type (expected .npy "
                               "or .pb)");
}

Error writeTensorFile(StringRef Path, const Tensor &T, StringRef Name) {
  if (hasExtension(Path, ".npy"))
    return writeNpyFile(Path, T);
  if (hasExtension(Path, ".pb")) {
    // writeTensorProtoFile writes in place; go through a temporary file so
    // the final name appears only once the data is complete.
    SmallString<256> Model(Path);
    Model += ".tmp-%%%%%%";
    SmallString<256> TmpPath;
    if (std::error_code EC = sys::fs::createUniqueFile(Model, TmpPath))
      return createStringError(EC, "cannot create a file beside '" + Path +
                                       "': " + EC.message());
    if (Error E = writeTensorProtoFile(TmpPath, T, Name)) {
      sys::fs::remove(TmpPath);
      return E;
    }
    if (std::error_code EC = sys::fs::rename(TmpPath, Path)) {
      sys::fs::remove(TmpPath);
      return createStringError(EC, "cannot rename '" + TmpPath + "' to '" +
                                       Path + "': " + EC.message());
    }
    return Error::success();
  }
  return createStringError(inconvertibleErrorCode(),
                           "'" + Path +
                               "': unknown tensor file type (expected .npy "
                               "or .pb)");
}

std::string sanitizeFileName(StringRef Name) {
  std::string Out;
  for (char C : Name)
    Out.push_back(isAlnum(C) || C == '.' || C == '_' || C == '-' ? C : '_');
  if (Out.empty() || Out[0] == '.')
    Out.insert(Out.begin(), '_');
  // Keep names well under common file-name limits (255 bytes) leaving room
  // for an extension.
  if (Out.size() > 200)
    Out.resize(200);
  return Out;
}

} // namespace solder
