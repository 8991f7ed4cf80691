//===- Printer.cpp - Textual form of solder's IR
//---------------------------===//
//
// Writes graphs in the format parsed by Parser.cpp. Floats are printed with
// the fewest digits that read back to the same bits; constants whose bits a
// readable list cannot carry (NaN payloads, bool bytes other than 0/1) are
// printed in hex whatever their size.
//
//===----------------------------------------------------------------------===//
#include "ir/Printer.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace solder {

//===----------------------------------------------------------------------===//
// Numbers and names
//===----------------------------------------------------------------------===//

/// Prints V with the fewest significant digits (up to MaxDigits) for which
/// RoundTrips accepts the text, in fixed notation where the %g exponent form
/// would be used only because there are few digits (so 100 prints as
/// "100.0", not "1e+02"), and with ".0" added to integral-looking results.
template <typename RoundTripFn>
static std::string formatShortest(double V, int MaxDigits,
                                  RoundTripFn RoundTrips) {
  if (std::isnan(V))
    return "nan";
  if (std::isinf(V))
    return V < 0 ? "-inf" : "inf";
  char Buf[64];
  int Digits = MaxDigits;
  for (int P = 1; P <= MaxDigits; ++P) {
    std::snprintf(Buf, sizeof(Buf), "%.*g", P, V);
    if (RoundTrips(Buf)) {
      Digits = P;
      break;
    }
  }
  // Decimal exponent after rounding to Digits digits.
  std::snprintf(Buf, sizeof(Buf), "%.*e", Digits - 1, V);
  int Exp = std::atoi(std::strchr(Buf, 'e') + 1);
  if (Exp >= Digits && Exp < 16)
    Digits = Exp + 1;
  std::snprintf(Buf, sizeof(Buf), "%.*g", Digits, V);
  std::string S = Buf;
  if (S.find_first_of(".e") == std::string::npos)
    S += ".0";
  return S;
}

std::string formatFloat(float F) {
  uint32_t Bits;
  std::memcpy(&Bits, &F, 4);
  return formatShortest(F, 9, [&](const char *S) {
    float R = std::strtof(S, nullptr);
    uint32_t RB;
    std::memcpy(&RB, &R, 4);
    return RB == Bits;
  });
}

std::string formatDouble(double D) {
  uint64_t Bits;
  std::memcpy(&Bits, &D, 8);
  return formatShortest(D, 17, [&](const char *S) {
    double R = std::strtod(S, nullptr);
    uint64_t RB;
    std::memcpy(&RB, &R, 8);
    return RB == Bits;
  });
}

std::string formatHalf(uint16_t H) {
  return formatShortest(halfToFloat(H), 9, [&](const char *S) {
    return floatToHalf(std::strtof(S, nullptr)) == H;
  });
}

std::string formatBF16(uint16_t B) {
  return formatShortest(bf16ToFloat(B), 9, [&](const char *S) {
    return floatToBF16(std::strtof(S, nullptr)) == B;
  });
}

static bool isNameChar(char C) {
  return (C >= 'a' && C <= 'z') || (C >= 'A' && C <= 'Z') ||
         (C >= '0' && C <= '9') || C == '_' || C == '.';
}

/// [A-Za-z_][A-Za-z0-9_.]*: printed bare for symbols and attribute names.
static bool isIdentifier(llvm::StringRef S) {
  if (S.empty() || (S[0] >= '0' && S[0] <= '9') || S[0] == '.')
    return false;
  for (char C : S)
    if (!isNameChar(C))
      return false;
  return true;
}

void printQuotedString(llvm::raw_ostream &OS, llvm::StringRef S) {
  static const char Hex[] = "0123456789abcdef";
  OS << '"';
  for (unsigned char C : S) {
    if (C == '"')
      OS << "\\\"";
    else if (C == '\\')
      OS << "\\\\";
    else if (C == '\n')
      OS << "\\n";
    else if (C == '\t')
      OS << "\\t";
    else if (C < 0x20 || C >= 0x7f)
      OS << "\\x" << Hex[C >> 4] << Hex[C & 15];
    else
      OS << char(C);
  }
  OS << '"';
}

void printValueName(llvm::raw_ostream &OS, llvm::StringRef Name) {
  OS << '%';
  bool Bare = !Name.empty();
  for (char C : Name)
    Bare &= isNameChar(C);
  if (Bare)
    OS << Name;
  else
    printQuotedString(OS, Name);
}

void printParsableType(llvm::raw_ostream &OS, const TensorType &T) {
  OS << dtypeName(T.Elem) << '[';
  for (unsigned I = 0; I < T.Dims.size(); ++I) {
    if (I)
      OS << ',';
    const Dim &D = T.Dims[I];
    if (D.isSymbol() && !isIdentifier(D.symbol()))
      printQuotedString(OS, D.symbol());
    else
      printDim(OS, D);
  }
  OS << ']';
}

//===----------------------------------------------------------------------===//
// Constant data
//===----------------------------------------------------------------------===//

/// Whether a readable list would lose bits of T: NaNs (payload and sign
/// are not printed) and bools stored as bytes other than 0 and 1.
static bool needsHex(const Tensor &T) {
  int64_t N = T.numElements();
  switch (T.dtype()) {
  case DType::F32:
  case DType::F64:
  case DType::F16:
  case DType::BF16:
    for (int64_t I = 0; I < N; ++I)
      if (std::isnan(T.getDouble(I)))
        return true;
    return false;
  case DType::Bool:
    for (int64_t I = 0; I < N; ++I)
      if (T.data<uint8_t>()[I] > 1)
        return true;
    return false;
  default:
    return false;
  }
}

static void printElement(llvm::raw_ostream &OS, const Tensor &T, int64_t I) {
  switch (T.dtype()) {
  case DType::F32:
    OS << formatFloat(T.data<float>()[I]);
    return;
  case DType::F64:
    OS << formatDouble(T.data<double>()[I]);
    return;
  case DType::F16:
    OS << formatHalf(T.data<uint16_t>()[I]);
    return;
  case DType::BF16:
    OS << formatBF16(T.data<uint16_t>()[I]);
    return;
  case DType::Bool:
    OS << (T.data<uint8_t>()[I] ? "true" : "false");
    return;
  case DType::U64:
    OS << T.data<uint64_t>()[I];
    return;
  default:
    OS << T.getInt64(I);
    return;
  }
}

/// `[a, b, ...]`, `hex"..."` or `elided`.
static void printTensorData(llvm::raw_ostream &OS, const Tensor &T,
                            const PrintOptions &Opts) {
  int64_t N = T.numElements();
  bool Large = N > int64_t(Opts.ElideThresholdElements);
  if (Large && Opts.ElideLargeConstants) {
    OS << "elided";
    return;
  }
  if (!Large && !needsHex(T)) {
    OS << '[';
    for (int64_t I = 0; I < N; ++I) {
      if (I)
        OS << ", ";
      printElement(OS, T, I);
    }
    OS << ']';
    return;
  }
  // Raw bytes in memory order (solder only runs on little-endian hosts).
  static const char Hex[] = "0123456789abcdef";
  const auto *P = static_cast<const unsigned char *>(T.rawData());
  size_t Size = T.byteSize();
  OS << "hex\"";
  char Buf[4096];
  for (size_t I = 0; I < Size;) {
    size_t K = 0;
    for (; K + 2 <= sizeof(Buf) && I < Size; ++I) {
      Buf[K++] = Hex[P[I] >> 4];
      Buf[K++] = Hex[P[I] & 15];
    }
    OS.write(Buf, K);
  }
  OS << '"';
}

//===----------------------------------------------------------------------===//
// Attributes, nodes, graphs
//===----------------------------------------------------------------------===//

static void printAttribute(llvm::raw_ostream &OS, const Attribute &A,
                           const PrintOptions &Opts) {
  switch (A.kind()) {
  case AttrKind::Int:
    OS << A.getInt();
    return;
  case AttrKind::Float:
    OS << formatFloat(A.getFloat());
    return;
  case AttrKind::String:
    printQuotedString(OS, A.getString());
    return;
  case AttrKind::Ints: {
    if (A.getInts().empty()) {
      OS << "ints[]";
      return;
    }
    OS << '[';
    for (size_t I = 0; I < A.getInts().size(); ++I)
      OS << (I ? ", " : "") << A.getInts()[I];
    OS << ']';
    return;
  }
  case AttrKind::Floats: {
    if (A.getFloats().empty()) {
      OS << "floats[]";
      return;
    }
    OS << '[';
    for (size_t I = 0; I < A.getFloats().size(); ++I)
      OS << (I ? ", " : "") << formatFloat(A.getFloats()[I]);
    OS << ']';
    return;
  }
  case AttrKind::Strings: {
    if (A.getStrings().empty()) {
      OS << "strings[]";
      return;
    }
    OS << '[';
    for (size_t I = 0; I < A.getStrings().size(); ++I) {
      if (I)
        OS << ", ";
      printQuotedString(OS, A.getStrings()[I]);
    }
    OS << ']';
    return;
  }
  case AttrKind::Tensor: {
    const Tensor &T = A.getTensor();
    if (T.isNull()) {
      OS << "tensor<null>";
      return;
    }
    OS << "tensor<";
    printParsableType(OS, T.type());
    OS << ": ";
    printTensorData(OS, T, Opts);
    OS << '>';
    return;
  }
  }
}

static void printGraphAt(llvm::raw_ostream &OS, const Graph &G,
                         const PrintOptions &Opts, unsigned Indent);

static void printNodeAt(llvm::raw_ostream &OS, const Node &N,
                        const PrintOptions &Opts, unsigned Indent) {
  llvm::ArrayRef<Value *> Results = N.results();
  for (size_t I = 0; I < Results.size(); ++I) {
    if (I)
      OS << ", ";
    if (Results[I])
      printValueName(OS, Results[I]->name());
    else
      OS << '_';
  }
  if (!Results.empty())
    OS << " = ";
  OS << N.opName() << '(';
  for (unsigned I = 0; I < N.numOperands(); ++I) {
    if (I)
      OS << ", ";
    if (Value *V = N.operand(I))
      printValueName(OS, V->name());
    else
      OS << "none";
  }
  OS << ')';
  if (!N.attrs().empty()) {
    OS << " {";
    bool First = true;
    for (const auto &E : N.attrs()) {
      OS << (First ? "" : ", ");
      First = false;
      if (isIdentifier(E.first))
        OS << E.first;
      else
        printQuotedString(OS, E.first);
      OS << " = ";
      printAttribute(OS, E.second, Opts);
    }
    OS << '}';
  }
  if (!Results.empty()) {
    OS << " : ";
    for (size_t I = 0; I < Results.size(); ++I) {
      if (I)
        OS << ", ";
      if (Results[I])
        printParsableType(OS, Results[I]->type());
      else
        OS << '_';
    }
  }
  if (!N.name().empty()) {
    OS << " @";
    printQuotedString(OS, N.name());
  }
  if (const Graph *Body = N.body()) {
    OS << " body ";
    printGraphAt(OS, *Body, Opts, Indent);
  }
}

static void printGraphAt(llvm::raw_ostream &OS, const Graph &G,
                         const PrintOptions &Opts, unsigned Indent) {
  OS << "graph ";
  printQuotedString(OS, G.name());
  OS << " opset " << G.opsetVersion() << " {\n";
  auto Pad = [&] { OS.indent(Indent + 2); };
  for (const Value *V : G.inputs()) {
    Pad();
    OS << "input ";
    printValueName(OS, V->name());
    OS << " : ";
    printParsableType(OS, V->type());
    OS << '\n';
  }
  for (const Value *V : G.constants()) {
    Pad();
    OS << "const ";
    printValueName(OS, V->name());
    OS << " : ";
    const Tensor &T = *V->constant();
    printParsableType(OS, T.type());
    OS << " = ";
    printTensorData(OS, T, Opts);
    OS << '\n';
  }
  for (const auto &N : G.nodes()) {
    Pad();
    printNodeAt(OS, *N, Opts, Indent + 2);
    OS << '\n';
  }
  for (const Value *V : G.outputs()) {
    Pad();
    OS << "output ";
    if (V)
      printValueName(OS, V->name());
    else
      OS << "none"; // invalid; the verifier reports it, the parser rejects it
    OS << '\n';
  }
  OS.indent(Indent);
  OS << "}";
}

void printGraph(llvm::raw_ostream &OS, const Graph &G,
                const PrintOptions &Opts) {
  printGraphAt(OS, G, Opts, 0);
  OS << '\n';
}

std::string graphToString(const Graph &G, const PrintOptions &Opts) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  printGraph(OS, G, Opts);
  OS.flush();
  return S;
}

void printNode(llvm::raw_ostream &OS, const Node &N, const PrintOptions &Opts) {
  printNodeAt(OS, N, Opts, 0);
}

std::string nodeToString(const Node &N, const PrintOptions &Opts) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  printNode(OS, N, Opts);
  OS.flush();
  return S;
}

} // namespace solder
