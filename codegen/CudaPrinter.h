//===- CudaPrinter.h - Structured printer for CUDA C++ source ---*- C++ -*-===//
//
// Kernels are printed, not concatenated: a CudaPrinter keeps the file-scope
// declarations (helper functions, typedefs) apart from the kernel body,
// indents the body through RAII scope objects, hands out unique local names,
// and records which element types were printed so the preamble includes
// cuda_fp16.h / cuda_bf16.h only when needed. The same calls always give the
// same bytes, so generated sources are cacheable and diffable.
//
//   CudaPrinter P;
//   {
//     auto K = P.scope("extern \"C\" __global__ void k(float *out)");
//     auto L = P.scope("for (int i = 0; i < 4; ++i)");
//     P.line("out[i] = 0.f;");
//   }
//   std::string Src = P.finish();
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_CODEGEN_CUDAPRINTER_H
#define SOLDER_CODEGEN_CUDAPRINTER_H

#include "ir/DType.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"
#include <set>
#include <string>
#include <vector>

namespace solder {

class CudaPrinter {
public:
  /// Closes a `{` block when it goes out of scope (prints `}` plus an
  /// optional trailer such as `;` or ` while (0);`).
  class Scope {
  public:
    Scope(Scope &&O) : P(O.P), Trailer(std::move(O.Trailer)) { O.P = nullptr; }
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;
    Scope &operator=(Scope &&) = delete;
    ~Scope();

  private:
    friend class CudaPrinter;
    Scope(CudaPrinter *P, std::string Trailer)
        : P(P), Trailer(std::move(Trailer)) {}
    CudaPrinter *P;
    std::string Trailer;
  };

  CudaPrinter() = default;
  CudaPrinter(const CudaPrinter &) = delete;
  CudaPrinter &operator=(const CudaPrinter &) = delete;

  /// Prints one body line at the current indentation.
  void line(const llvm::Twine &Text);
  /// An empty body line.
  void blank();
  /// Prints `Header {` and indents until the returned Scope dies.
  [[nodiscard]] Scope scope(const llvm::Twine &Header,
                            llvm::StringRef Trailer = "");
  unsigned indentLevel() const { return Indent; }

  /// A position in the body (where the next line goes), for printedSince
  /// and insertLines: code printed first can decide what goes before it.
  size_t mark() const { return Body.size(); }
  /// The body text printed since Mark.
  llvm::StringRef printedSince(size_t Mark) const;
  /// Inserts Lines at Mark (later marks shift by what is inserted),
  /// indented at Level.
  void insertLines(size_t Mark, unsigned Level,
                   llvm::ArrayRef<std::string> Lines);

  /// Adds a file-scope declaration (helper function, typedef). Declarations
  /// with the same Key are printed once, in first-added order.
  void declare(llvm::StringRef Key, llvm::StringRef Text);

  /// A local name not handed out before: Base, then Base1, Base2...
  std::string uniqueName(llvm::StringRef Base);

  /// The CUDA storage type of T ("float", "__half", "long long"...), noting
  /// that T was printed so the preamble includes its header.
  std::string storageType(DType T);
  /// Records use of T without printing it (e.g. an f16 conversion helper).
  void noteType(DType T);
  bool usesType(DType T) const { return UsedTypes.count(T) != 0; }

  /// The complete translation unit: preamble (includes as needed), the
  /// declarations, then the body.
  std::string finish() const;

private:
  void closeScope(llvm::StringRef Trailer);

  unsigned Indent = 0;
  std::string Body;
  std::vector<std::string> DeclKeys;
  llvm::StringMap<std::string> Decls;
  llvm::StringMap<unsigned> NextSuffix;
  llvm::StringSet<> Used;
  std::set<DType> UsedTypes;
};

/// Storage type of a dtype without noting it (for messages and tables).
llvm::StringRef cudaStorageTypeName(DType T);

} // namespace solder

#endif
